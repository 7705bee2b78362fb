"""Writes a one-layer OCI image archive, for `ctr images import`.

    python3 oci_image.py OUT.tar NAME:TAG ENTRYPOINT [BINARY...]
    python3 oci_image.py --root DIR OUT.tar NAME:TAG ENTRYPOINT

The first form's layer holds ENTRYPOINT and each BINARY (static programs) as /<its file name>, and
the image runs ENTRYPOINT as user 65535 (as registry.k8s.io/pause does). The second's layer is the
tree DIR (files, folders and symbolic links as they are there), ENTRYPOINT a path in it, run as
root like deploy/Dockerfile's image. Times and owners are fixed, so the same files give the same
image digest.
"""
import hashlib
import io
import json
import os
import sys
import tarfile


def add(archive, name, data):
    info = tarfile.TarInfo(name)
    info.size = len(data)
    info.mtime = 0
    archive.addfile(info, io.BytesIO(data))


def add_blob(archive, data):
    digest = hashlib.sha256(data).hexdigest()
    add(archive, "blobs/sha256/" + digest, data)
    return "sha256:" + digest


def clean(info):
    info.mtime, info.uid, info.gid, info.uname, info.gname = 0, 0, 0, "", ""
    return info


def binaries_layer(binaries):
    layer = io.BytesIO()
    with tarfile.open(fileobj=layer, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for binary in binaries:
            with open(binary, "rb") as f:
                tar.addfile(clean(tar.gettarinfo(binary, os.path.basename(binary))), f)
    return layer.getvalue()


def tree_layer(root):
    layer = io.BytesIO()
    with tarfile.open(fileobj=layer, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for folder, folders, files in os.walk(root):
            folders.sort()
            for name in sorted(folders) + sorted(files):
                path = os.path.join(folder, name)
                info = clean(tar.gettarinfo(path, os.path.relpath(path, root)))
                if info.isfile():
                    with open(path, "rb") as f:
                        tar.addfile(info, f)
                else:
                    tar.addfile(info)
    return layer.getvalue()


def main(out, reference, image_config, layer):
    tag = reference.rsplit(":", 1)[1]
    with tarfile.open(out + ".new", "w", format=tarfile.PAX_FORMAT) as archive:
        layer_digest = add_blob(archive, layer)
        config = json.dumps({
            "architecture": "amd64", "os": "linux",
            "config": image_config,
            "rootfs": {"type": "layers", "diff_ids": [layer_digest]},
        }).encode()
        manifest = json.dumps({
            "schemaVersion": 2,
            "mediaType": "application/vnd.oci.image.manifest.v1+json",
            "config": {"mediaType": "application/vnd.oci.image.config.v1+json",
                       "digest": add_blob(archive, config), "size": len(config)},
            "layers": [{"mediaType": "application/vnd.oci.image.layer.v1.tar",
                        "digest": layer_digest, "size": len(layer)}],
        }).encode()
        index = json.dumps({"schemaVersion": 2, "manifests": [{
            "mediaType": "application/vnd.oci.image.manifest.v1+json",
            "digest": add_blob(archive, manifest), "size": len(manifest),
            "annotations": {"io.containerd.image.name": reference,
                            "org.opencontainers.image.ref.name": tag}}]}).encode()
        add(archive, "index.json", index)
        add(archive, "oci-layout", b'{"imageLayoutVersion":"1.0.0"}')
    os.replace(out + ".new", out)


if __name__ == "__main__":
    args = sys.argv[1:]
    root = None
    if args[:1] == ["--root"] and len(args) >= 2:
        root, args = args[1], args[2:]
    if len(args) < 3 or ":" not in args[1] or (root is not None and len(args) != 3):
        sys.exit("usage: oci_image.py OUT.tar NAME:TAG ENTRYPOINT [BINARY...] | "
                 "--root DIR OUT.tar NAME:TAG ENTRYPOINT")
    if root is None:
        config = {"Entrypoint": ["/" + os.path.basename(args[2])], "User": "65535:65535"}
        main(args[0], args[1], config, binaries_layer(args[2:]))
    else:
        # Debian's PATH, as in deploy/Dockerfile's base image, so `kubectl exec POD -- gpunode`
        # finds the program.
        config = {"Entrypoint": [args[2]],
                  "Env": ["PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"]}
        main(args[0], args[1], config, tree_layer(root))
