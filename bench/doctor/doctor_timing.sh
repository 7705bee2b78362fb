#!/usr/bin/env bash
# Whole-process timing of `gpunode doctor -o json` on the simulator's 8-GPU dgx-h100 profile and
# the healthy fixture tree as it is (PCI devices and device nodes included), N runs, median and
# p99 in ms.
# Usage: bench/doctor/doctor_timing.sh [build-dir] [runs]
set -euo pipefail
cd "$(dirname "$0")/../.."
build=${1:-build}
runs=${2:-50}
root=$(mktemp -d)
trap 'rm -rf "$root"' EXIT
cp -r tests/fixtures/doctor/healthy/. "$root"
# Git keeps no mode bits but the execute bit: the device nodes get the driver's 0666 here.
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
