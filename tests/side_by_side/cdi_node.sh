# Sourced, not run (tests/side_by_side/cdi_generate_test.sh, bench/side_by_side/cdi_generate.sh):
# the simulated node on which NVIDIA's `nvidia-ctk cdi generate` and `gpunode cdi generate` run
# beside each other, on the same driver root, device tree and simulated GPUs.
#
# The driver root is tests/cdi/driver_root.sh's (Debian's NVIDIA 535 packages). nvidia-ctk loads
# NVML from the driver root itself (the libnvidia-ml.so.1 it locates there, whatever
# LD_LIBRARY_PATH says) and reads three things outside it that no flag moves: the MIG minors in
# /proc/driver/nvidia-caps, the DRM devices of each GPU under /sys/bus/pci/devices, and the device
# nodes, which must be character devices. So both run in a mount namespace of their own
# (`unshare -rm`, as the GFD comparison does), where the simulator is bound over the driver's
# libnvidia-ml.so.<version>, the driver root's proc/driver over /proc/driver, an empty directory
# over /sys/bus/pci/devices (the build machine's own PCI devices would otherwise answer for the
# simulated GPUs), and /dev/null over each device node of the tree (a character device where a
# real node has one; only the names reach a spec). gpunode reads the same things through its
# host root, /, so both see one node.

# cdi_node_check SOURCE_DIR: sets cdi_node_ctk, or prints why the comparison cannot run and
# returns 77.
cdi_node_check() {
  local tools
  tools=$(bash "$1/scripts/build-nvidia-tools.sh" --print-dir)
  cdi_node_ctk=$tools/nvidia-ctk
  if [[ ! -x $cdi_node_ctk ]]; then
    echo "SKIP: NVIDIA's nvidia-ctk is not built ($cdi_node_ctk): run scripts/build-nvidia-tools.sh"
    return 77
  fi
  local reason
  if ! reason=$(unshare -rm true 2>&1); then
    echo "SKIP: nvidia-ctk cannot be given a node of its own (unshare -rm: $reason)"
    return 77
  fi
}

# cdi_node_prepare SOURCE_DIR WORK: lays out WORK/driver, its device tree (16 GPU nodes and the
# capability node of every MIG minor the driver lists) and WORK/profiles/<name>.yaml, each
# built-in profile reporting the packages' driver version. Returns 77 (with the reason) when the
# packages are not there.
cdi_node_prepare() {
  local source_dir=$1 work=$2 root=$2/driver version status=0 minor profile
  version=$(bash "$source_dir/tests/cdi/driver_root.sh" "$root" 2>"$work/layout.log") || status=$?
  if ((status == 77)); then echo "SKIP: $(<"$work/layout.log")"; return 77; fi
  if ((status != 0)); then
    echo "tests/cdi/driver_root.sh failed: $(<"$work/layout.log")"
    return "$status"
  fi
  cdi_node_version=$version
  for minor in $(seq 0 15); do : >"$root/dev/nvidia$minor"; done
  mkdir -p "$root/dev/nvidia-caps" "$work/profiles" "$work/empty"
  while read -r _ minor; do
    : >"$root/dev/nvidia-caps/nvidia-cap$minor"
  done <"$root/proc/driver/nvidia-caps/mig-minors"
  for profile in "$source_dir"/sim/profiles/*.yaml; do
    sed -E "s/^driver_version: \"[0-9.]+\"/driver_version: \"$version\"/" "$profile" \
      >"$work/profiles/${profile##*/}"
  done
  echo "$version" >"$work/version"
}

# cdi_node_enter WORK SIM_LIBRARY: inside `unshare -rm`, makes the node described above.
cdi_node_enter() {
  local work=$1 root=$1/driver node
  cdi_node_version=$(<"$work/version")
  for node in "$root"/dev/nvidia* "$root"/dev/nvidia-caps/*; do
    if [[ -f $node ]]; then mount --bind /dev/null "$node"; fi
  done
  mount --bind "$root/proc/driver" /proc/driver
  mount --bind "$work/empty" /sys/bus/pci/devices
  mount --bind "$2" "$root/usr/lib/x86_64-linux-gnu/nvidia/current/libnvidia-ml.so.$cdi_node_version"
}

# cdi_node_nvidia_ctk WORK SPEC OUT / cdi_node_gpunode WORK GPUNODE SPEC OUT: one generation each,
# JSON to OUT, on the same roots and with the same hook program; stderr is the caller's.
cdi_node_nvidia_ctk() {
  local root=$1/driver
  env -i PATH="$PATH" GPUNODE_SIM="$2" "$cdi_node_ctk" cdi generate --driver-root "$root" \
    --dev-root "$root" --nvidia-cdi-hook-path "$root/usr/bin/nvidia-cdi-hook" --format json \
    --output "$3"
}
cdi_node_gpunode() {
  local root=$1/driver
  env -i PATH="$PATH" "$2" --sim "$3" --driver-root "$root" cdi generate --dev-root "$root" \
    --hook-path "$root/usr/bin/nvidia-cdi-hook" --format json --output "$4"
}
