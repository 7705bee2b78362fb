#!/usr/bin/env bash
# Whole-process timing of `gpunode doctor -o json` on the simulator's 8-GPU dgx-h100 profile and
# the healthy fixture tree (with its PCI devices and device nodes), N runs, median and p99 in ms.
# Usage: bench/doctor/doctor_timing.sh [build-dir] [runs]
set -euo pipefail
cd "$(dirname "$0")/../.."
build=${1:-build}
runs=${2:-50}
root=$(mktemp -d)
trap 'rm -rf "$root"' EXIT
cp -r tests/fixtures/doctor/healthy/. "$root"
i=0
for address in 0000:1b:00.0 0000:43:00.0 0000:52:00.0 0000:61:00.0 0000:9d:00.0 0000:c3:00.0 \
               0000:d1:00.0 0000:df:00.0; do
  dir=$root/sys/bus/pci/devices/$address
  mkdir -p "$dir"
  echo 0x10de >"$dir/vendor"; echo 0x2330 >"$dir/device"; echo 0x030200 >"$dir/class"
  touch "$root/dev/nvidia$i" 2>/dev/null || { mkdir -p "$root/dev"; touch "$root/dev/nvidia$i"; }
  i=$((i + 1))
done
touch "$root/dev/nvidiactl" "$root/dev/nvidia-uvm" "$root/dev/nvidia-uvm-tools"
chmod 0666 "$root"/dev/*
times=()
for _ in $(seq "$runs"); do
  start=$(date +%s%N)
  "$build/gpunode" --sim dgx-h100 --host-root "$root" doctor -o json >/dev/null || true
  times+=($((($(date +%s%N) - start) / 1000)))
done
printf '%s\n' "${times[@]}" | sort -n | awk -v n="$runs" '
  { t[NR] = $1 }
  END { printf "runs %d  median %.1f ms  p99 %.1f ms\n", n, t[int((n + 1) / 2)] / 1000, t[int(n * 0.99 + 0.999)] / 1000 }'
