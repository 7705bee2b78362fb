"""Writes a one-layer OCI image archive of static binaries, for `ctr images import`.

    python3 oci_image.py OUT.tar NAME:TAG ENTRYPOINT [BINARY...]

The layer holds ENTRYPOINT and each BINARY as /<its file name>; the image runs ENTRYPOINT as
user 65535 (as registry.k8s.io/pause does). Times and owners are fixed, so the same binaries give
the same image digest.
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


def main(out, reference, binaries):
    entry = os.path.basename(binaries[0])
    layer = io.BytesIO()
    with tarfile.open(fileobj=layer, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for binary in binaries:
            info = tar.gettarinfo(binary, os.path.basename(binary))
            info.mtime, info.uid, info.gid, info.uname, info.gname = 0, 0, 0, "", ""
            with open(binary, "rb") as f:
                tar.addfile(info, f)
    layer = layer.getvalue()
    tag = reference.rsplit(":", 1)[1]
    with tarfile.open(out + ".new", "w", format=tarfile.PAX_FORMAT) as archive:
        layer_digest = add_blob(archive, layer)
        config = json.dumps({
            "architecture": "amd64", "os": "linux",
            "config": {"Entrypoint": ["/" + entry], "User": "65535:65535"},
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
    if len(sys.argv) < 4 or ":" not in sys.argv[2]:
        sys.exit("usage: oci_image.py OUT.tar NAME:TAG ENTRYPOINT [BINARY...]")
    main(sys.argv[1], sys.argv[2], sys.argv[3:])
