#!/usr/bin/env bash
# NVIDIA's device plugin (v0.19.1, from scripts/build-nvidia-tools.sh) and gpunode's on the same
# simulated node and kubelet double, in one run: bench/side_by_side/device_plugin_bench.cc, built
# with the release build's benchmarks (build/), measuring the gpunode binary of BUILD-DIR.
# RUNS is not used: each figure has its own count (10 starts, 10,000 Allocates, ...); the CPU
# while idle is counted over IDLE_SECONDS (default 60).
# Usage: bench/side_by_side/device_plugin.sh [build-dir] [runs] [idle-seconds]   (default: build)
set -euo pipefail
cd "$(dirname "$0")/../.."
build=$(cd "${1:-build}" && pwd)
bench=build/bench/side_by_side/device_plugin_bench
[[ -x $bench ]] || { echo "device_plugin: $bench is not built: scripts/build.sh release" >&2; exit 3; }
"$bench" "$PWD" "$build/gpunode" "${3:-60}"
