#!/usr/bin/env bash
# Run inside `unshare -rm`: the simulated node of tests/side_by_side/cdi_node.sh (the driver root
# of Debian's NVIDIA packages with the simulator as its NVML, its /proc/driver and device nodes),
# with PCI_TREE bound over /sys/bus/pci/devices (each simulated GPU's address with its numa_node,
# which NVIDIA's plugin reads there for the topology it advertises and gpunode asks NVML for) and
# VARLIB bound over /var/lib so that /var/lib/kubelet/device-plugins, where NVIDIA's device
# plugin puts its sockets whatever its flags say, is the test's kubelet directory, and VARLIB/run
# over /run, so that /var/run/cdi, where NVIDIA's plugin writes its CDI spec whatever its flags
# say, is the test's too and the host's stays untouched. Then runs
# PROGRAM with only PATH, the simulator's profile and the driver's library directory in its
# environment, as both plugins get them.
#
# With --mps, the node shares its GPUs through MPS as NVIDIA's chart sets it up: a real control
# daemon per MPS resource (`GPUNODE mps-control-daemon`, which runs the driver packages'
# nvidia-cuda-mps-control with CONFIG's limits) under MPS_ROOT, awaited until it wrote
# MPS_ROOT/.ready; the driver's usr/bin on PATH, where NVIDIA's plugin finds the
# nvidia-cuda-mps-control it asks the daemon through (its container gets the driver's programs
# injected); and MPS_ROOT at /mps as well, where NVIDIA's plugin looks for the daemon's pipe
# whatever --mps-root says (its chart mounts the root there). / has no /mps, so PROGRAM runs in a
# root of its own that binds each entry of / and adds /mps. PROGRAM then runs as a child, SIGTERM
# and SIGINT passed on to it, and the daemon is stopped (and awaited) after it: the exit status
# is PROGRAM's, or 1 when the daemon does not stop cleanly.
# Usage: device_plugin_node.sh SOURCE_DIR WORK SIM_LIBRARY PROFILE PCI_TREE VARLIB
#          [--mps MPS_ROOT GPUNODE CONFIG] PROGRAM ARGS...
set -euo pipefail
source_dir=$1 work=$2 sim_library=$3 profile=$4 pci_tree=$5 varlib=$6
shift 6
source "$source_dir/tests/side_by_side/cdi_node.sh"
cdi_node_enter "$work" "$sim_library"
mount --bind "$pci_tree" /sys/bus/pci/devices
mount --bind "$varlib" /var/lib
mkdir -p "$varlib/run/cdi"
mount --bind "$varlib/run" /run
libraries=$work/driver/usr/lib/x86_64-linux-gnu/nvidia/current
if [[ ${1:-} != --mps ]]; then
  # When the plugin itself starts (the namespace's mounts took their time before): the
  # benchmark's "start to registered" counts from here.
  date +%s%N >"$varlib/exec-time"
  exec env -i PATH="$PATH" GPUNODE_SIM="$profile" LD_LIBRARY_PATH="$libraries" "$@"
fi
mps_root=$2 gpunode=$3 config=$4
shift 4
path=$work/driver/usr/bin:$PATH
mkdir -p "$mps_root"
# Both processes get SIGTERM should this script be killed, so that no daemon outlives the test.
setpriv --pdeathsig TERM env -i PATH="$path" GPUNODE_SIM="$profile" LD_LIBRARY_PATH="$libraries" \
  MPS_ROOT="$mps_root" "$gpunode" --driver-root "$work/driver" mps-control-daemon \
  --config-file "$config" &
daemon=$!
for ((waited = 0; waited < 600; ++waited)); do
  [[ -e $mps_root/.ready ]] && break
  if ! kill -0 "$daemon" 2>/dev/null; then
    echo "device_plugin_node.sh: the MPS control daemon stopped before it was ready" >&2
    exit 1
  fi
  sleep 0.05
done
if [[ ! -e $mps_root/.ready ]]; then
  echo "device_plugin_node.sh: the MPS control daemon was not ready in 30 s" >&2
  kill -TERM "$daemon"
  exit 1
fi
# The new root is a tmpfs of this namespace's own, bare in every run. /tmp first: its copy holds
# the new root, which must be bare when it is taken.
root=$work/root
mkdir -p "$root"
mount -t tmpfs tmpfs "$root"
for entry in /tmp /*; do
  target=$root$entry
  if [[ -e $target ]]; then continue; fi
  if [[ -L $entry ]]; then
    cp -P "$entry" "$target"
  elif [[ -d $entry ]]; then
    mkdir "$target"
    mount --rbind "$entry" "$target"
  fi
done
mkdir "$root/mps"
mount --bind "$mps_root" "$root/mps"
date +%s%N >"$varlib/exec-time"
setpriv --pdeathsig TERM chroot "$root" env -i PATH="$path" GPUNODE_SIM="$profile" \
  LD_LIBRARY_PATH="$libraries" "$@" &
program=$!
trap 'kill -TERM "$program" 2>/dev/null || true' TERM INT
status=0
wait "$program" || status=$?
# A trapped signal ends the wait before the program: wait again until it is gone.
while kill -0 "$program" 2>/dev/null; do
  status=0
  wait "$program" || status=$?
done
kill -TERM "$daemon"
daemon_status=0
wait "$daemon" || daemon_status=$?
if ((daemon_status != 0)); then
  echo "device_plugin_node.sh: the MPS control daemon exited with $daemon_status" >&2
  exit 1
fi
exit "$status"
