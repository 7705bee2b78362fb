#!/bin/sh
# The createContainer hook of the local node's `nvidia` runtime handler (nvidia_base_spec.py): run
# by runc in the container's mount namespace before pivot_root, with the container's state on
# stdin, it binds DIR (the simulated driver's /proc/driver) over the container's /proc/driver.
set -eu
bundle=$(python3 -c 'import json, sys; print(json.load(sys.stdin)["bundle"])')
exec mount --bind "$1" "$bundle/rootfs/proc/driver"
