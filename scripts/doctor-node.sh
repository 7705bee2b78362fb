#!/usr/bin/env bash
# A healthy GPU node's host root that `gpunode --sim dgx-h100 --host-root DIR doctor` passes with
# no failure and no warning: tests/fixtures/doctor/healthy copied to DIR, completed with what git
# cannot hold, and the two daemons doctor's socket checks talk to, running for real.
#
#   scripts/doctor-node.sh up DIR [--profile dgx-h100] [--case NAME]
#   scripts/doctor-node.sh down DIR     stop both daemons and remove DIR (nothing to do when gone)
#
# `up` gives the copy the device nodes' mode as the driver makes them (0666), each GPU's
# iommu_group link (a group of its own), its BARs (`resource`) and numa_node; lays the broken case
# tests/fixtures/doctor/NAME on top when one is named; then starts Debian's containerd, its CRI
# socket at DIR/run/containerd/containerd.sock and its state and root under DIR, loading the
# tree's own drop-ins (DIR/etc/containerd/conf.d, where the nvidia handler is), and gpunode's
# device plugin on the simulated PROFILE, serving in DIR/var/lib/kubelet/device-plugins without a
# kubelet to register with. It returns once containerd answers CRI and the plugin answers doctor.
# No kubelet runs, so doctor's kubelet.image-gc is skipped. Pid files, logs and containerd's own
# config are in DIR/run/doctor-node. Without root or containerd, `up` exits 3 with one line
# naming what is missing.
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)

usage() {
  echo "usage: scripts/doctor-node.sh up DIR [--profile PROFILE] [--case NAME] | down DIR" >&2
  exit 2
}
(($# >= 2)) || usage
verb=$1 dir=$2
shift 2

fixtures=$repo/tests/fixtures/doctor
# The simulator's dgx-h100 GPUs, as the tree's sysfs names them.
gpus=(0000:1b:00.0 0000:43:00.0 0000:52:00.0 0000:61:00.0 0000:9d:00.0 0000:c3:00.0 0000:d1:00.0
  0000:df:00.0)
gpunode=$(command -v gpunode || echo "$repo/build/gpunode")

# Why this machine cannot run the node, or nothing.
missing() {
  ((EUID == 0)) || { echo "containerd needs root"; return; }
  command -v containerd >/dev/null ||
    { echo "containerd is not installed (scripts/install-deps.sh installs it)"; return; }
  [[ -x $gpunode ]] || echo "no gpunode on PATH or in $repo/build (scripts/build.sh builds it)"
}

# Stops the daemon named by DIR/run/doctor-node/NAME.pid and awaits its exit. A pid whose process
# does not name DIR on its command line is another process by now, and is left alone.
stop() {
  local name=$1 pid left
  local file=$state/$name.pid
  [[ -f $file ]] || return 0
  pid=$(<"$file")
  if tr '\0' ' ' 2>/dev/null <"/proc/$pid/cmdline" | grep -qF -- "$dir"; then
    kill -TERM "$pid" 2>/dev/null || true
    for ((left = 100; left > 0; left--)); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    if kill -0 "$pid" 2>/dev/null; then
      kill -KILL "$pid" 2>/dev/null || true
      while kill -0 "$pid" 2>/dev/null; do sleep 0.1; done
    fi
  fi
  rm -f "$file"
}

fail_with_log() {
  local name=$1 why=$2
  echo "doctor-node: $name $why; the end of $state/$name.log:" >&2
  tail -n 20 "$state/$name.log" >&2 || true
  stop device-plugin
  stop containerd
  exit 1
}

# Waits until `check` passes, failing at once when the daemon exited.
await() {
  local name=$1 seconds=$2
  shift 2
  local deadline=$((SECONDS + seconds))
  until "$@" >/dev/null 2>&1; do
    kill -0 "$(<"$state/$name.pid")" 2>/dev/null || fail_with_log "$name" "exited"
    ((SECONDS < deadline)) || fail_with_log "$name" "was not ready within ${seconds}s"
    sleep 0.1
  done
}

start() {
  local name=$1
  shift
  setsid "$@" >"$state/$name.log" 2>&1 </dev/null &
  echo $! >"$state/$name.pid"
}

# What git keeps of the tree is its files' contents and the execute bit; the rest is made here,
# as tests/doctor/doctor_test.cc makes it.
complete_tree() {
  local i address device group
  chmod 0666 "$dir"/dev/*
  for i in "${!gpus[@]}"; do
    address=${gpus[i]} group=$((20 + i))
    device=$dir/sys/bus/pci/devices/$address
    echo 0 >"$device/numa_node"
    # BAR0 16 MiB, BAR1 128 GiB, BAR3 32 MiB.
    printf '%s\n' "0x00000000e0000000 0x00000000e0ffffff 0x0000000000040200" \
      "0x0000220000000000 0x0000221fffffffff 0x000000000014220c" \
      "0x0000000000000000 0x0000000000000000 0x0000000000000000" \
      "0x0000222000000000 0x0000222001ffffff 0x000000000014220c" >"$device/resource"
    mkdir -p "$dir/sys/kernel/iommu_groups/$group/devices"
    : >"$dir/sys/kernel/iommu_groups/$group/devices/$address"
    ln -s "../../../../kernel/iommu_groups/$group" "$device/iommu_group"
  done
}

# containerd's own locations under DIR and the tree's runc handler, then the tree's drop-ins
# (DIR/etc/containerd/conf.d) word for word but their `version` line. They are copied rather than
# imported: containerd reads imports from the real filesystem, and an imported file's CRI table
# replaces the main file's whole (runc would be gone).
write_containerd_config() {
  cat >"$state/containerd.toml" <<TOML
version = 2
root = "$dir/var/lib/containerd"
state = "$dir/run/containerd"
disabled_plugins = ["io.containerd.snapshotter.v1.aufs", "io.containerd.snapshotter.v1.btrfs", "io.containerd.snapshotter.v1.devmapper", "io.containerd.snapshotter.v1.zfs"]
[grpc]
  address = "$dir/run/containerd/containerd.sock"
[ttrpc]
  address = "$dir/run/containerd/containerd.sock.ttrpc"
[debug]
  address = "$dir/run/containerd/debug.sock"
[plugins."io.containerd.internal.v1.opt"]
  path = "$dir/opt/containerd"
[plugins."io.containerd.grpc.v1.cri".cni]
  conf_dir = "$dir/etc/cni/net.d"
[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
  runtime_type = "io.containerd.runc.v2"
TOML
  local dropin
  for dropin in "$dir"/etc/containerd/conf.d/*.toml; do
    [[ -f $dropin ]] || continue
    printf '# %s\n' "${dropin#"$dir"}"
    sed '/^version *=/d' "$dropin"
  done >>"$state/containerd.toml"
}

# CRI answers: its Status names the runc handler of containerd's config.
cri_answers() {
  "$gpunode" runtime status --socket "$dir/run/containerd/containerd.sock" --handler runc
}

# The plugin answers GetDevicePluginOptions on its socket, as doctor's plugin.socket asks it.
plugin_answers() {
  local report
  report=$("$gpunode" --sim "$profile" --host-root "$dir" doctor 2>/dev/null || true)
  grep -Eq '^ok +plugin\.socket ' <<<"$report"
}

up() {
  local why profile=dgx-h100 case_name=""
  while (($#)); do
    case $1 in
      --profile) (($# >= 2)) || usage; profile=$2; shift 2 ;;
      --case) (($# >= 2)) || usage; case_name=$2; shift 2 ;;
      *) usage ;;
    esac
  done
  why=$(missing)
  if [[ -n $why ]]; then
    echo "doctor-node: no node: $why" >&2
    exit 3
  fi
  if [[ -n $case_name && ( $case_name == */* || ! -d $fixtures/$case_name || " healthy pod profiles " == *" $case_name "* ) ]]; then
    echo "doctor-node: --case $case_name: not a case of tests/fixtures/doctor" >&2
    exit 2
  fi
  if [[ -e $dir && -n $(ls -A "$dir") ]]; then
    echo "doctor-node: $dir is not empty: run down first, or name another directory" >&2
    exit 2
  fi
  mkdir -p "$dir"
  local shown=$dir
  dir=$(cd "$dir" && pwd)
  # A unix socket's path has at most 107 bytes: the longest here is the plugin's.
  local longest=$dir/var/lib/kubelet/device-plugins/nvidia-gpu.sock
  if ((${#longest} > 107)); then
    rmdir "$dir"
    echo "doctor-node: $shown: too long a path for its sockets (${#longest} bytes in $longest; 107 at most)" >&2
    exit 2
  fi
  state=$dir/run/doctor-node
  cp -r "$fixtures/healthy/." "$dir"
  complete_tree
  [[ -z $case_name ]] || cp -r "$fixtures/$case_name/." "$dir"
  mkdir -p "$state" "$dir/run/containerd"

  write_containerd_config
  start containerd containerd --config "$state/containerd.toml"
  await containerd 30 cri_answers
  # No kubelet runs here to register with: --kubelet-socket "" serves without registering.
  start device-plugin "$gpunode" --sim "$profile" --host-root "$dir" device-plugin \
    --kubelet-dir "$dir/var/lib/kubelet/device-plugins" --kubelet-socket ""
  await device-plugin 30 plugin_answers
  echo "doctor-node: containerd and gpunode's device plugin ($profile) run for $shown;" \
    "stop them with scripts/doctor-node.sh down $shown" >&2
}

down() {
  [[ -e $dir ]] || return 0
  if [[ ! -d $dir/run/doctor-node ]]; then
    echo "doctor-node: $dir was not made by up: left alone" >&2
    exit 2
  fi
  dir=$(cd "$dir" && pwd)
  state=$dir/run/doctor-node
  stop device-plugin
  stop containerd
  rm -rf "$dir"
}

case $verb in
  up) up "$@" ;;
  down) (($# == 0)) || usage; down ;;
  *) usage ;;
esac
