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
# Usage: device_plugin_node.sh SOURCE_DIR WORK SIM_LIBRARY PROFILE PCI_TREE VARLIB PROGRAM ARGS...
set -euo pipefail
source_dir=$1 work=$2 sim_library=$3 profile=$4 pci_tree=$5 varlib=$6
shift 6
source "$source_dir/tests/side_by_side/cdi_node.sh"
cdi_node_enter "$work" "$sim_library"
mount --bind "$pci_tree" /sys/bus/pci/devices
mount --bind "$varlib" /var/lib
mkdir -p "$varlib/run/cdi"
mount --bind "$varlib/run" /run
# When the plugin itself starts (the namespace's mounts took their time before): the benchmark's
# "start to registered" counts from here.
date +%s%N >"$varlib/exec-time"
exec env -i PATH="$PATH" GPUNODE_SIM="$profile" \
  LD_LIBRARY_PATH="$work/driver/usr/lib/x86_64-linux-gnu/nvidia/current" "$@"
