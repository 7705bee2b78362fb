"""Writes the base OCI spec of the local node's `nvidia` runtime handler (scripts/local-cluster.sh).

    ctr oci spec | python3 nvidia_base_spec.py DRIVER_DIR LIBRARY_DIR VERSION HOOK > spec.json

It stands in for NVIDIA's runtime on a node whose GPUs are simulated: every container of the
handler gets DRIVER_DIR/lib's libnvidia-ml.so.VERSION (the simulator) and libcuda.so.VERSION
mounted read-only in LIBRARY_DIR under their versioned and .1 names, GPUNODE_SIM_DEVICE_NODES=/dev
(NVML shows only the GPUs whose device nodes the container was given) and, through HOOK,
DRIVER_DIR/proc/driver at /proc/driver.
"""
import json
import sys


def main(driver, library_dir, version, hook):
    spec = json.load(sys.stdin)
    for name in ("libnvidia-ml.so", "libcuda.so"):
        for link in (name + ".1", name + "." + version):
            spec["mounts"].append({
                "destination": library_dir + "/" + link, "type": "bind",
                "source": driver + "/lib/" + name + "." + version,
                "options": ["rbind", "ro", "nosuid", "nodev"]})
    spec["process"].setdefault("env", []).append("GPUNODE_SIM_DEVICE_NODES=/dev")
    # runc refuses a mount under /proc in the spec; NVIDIA's hook mounts the driver's
    # /proc/driver/nvidia from the container's mount namespace, and so does HOOK.
    spec.setdefault("hooks", {})["createContainer"] = [
        {"path": "/bin/sh", "args": ["sh", hook, driver + "/proc/driver"]}]
    json.dump(spec, sys.stdout, indent=1)


if __name__ == "__main__":
    if len(sys.argv) != 5:
        sys.exit("usage: nvidia_base_spec.py DRIVER_DIR LIBRARY_DIR VERSION HOOK < ctr-oci-spec.json")
    main(*sys.argv[1:])
