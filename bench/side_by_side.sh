#!/usr/bin/env bash
# NVIDIA's programs and gpunode's, in one run on the same machine and the same simulated nodes:
# every comparison under bench/side_by_side/ one after the other (`nvidia-ctk cdi generate` vs
# `gpunode cdi generate`, `nvidia-device-plugin` vs `gpunode device-plugin`,
# `gpu-feature-discovery --oneshot` vs `gpunode labels --oneshot`), each printing both programs'
# figures and their ratio, as docs/PERFORMANCE.md quotes them. NVIDIA's programs come from
# scripts/build-nvidia-tools.sh; the device plugin's driver is built with the release build's
# benchmarks. Give the dist build (scripts/build.sh dist) for the figures of what ships.
# Usage: bench/side_by_side.sh [build-dir] [runs]   (default: build-dist if built, else build; 30)
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-}
if [[ -z $build ]]; then
  build=build
  if [[ -x build-dist/gpunode && -e build-dist/libgpunode-sim.so ]]; then build="build-dist"; fi
fi
runs=${2:-30}
for bench in bench/side_by_side/*.sh; do
  echo "== $bench $build $runs"
  bash "$bench" "$build" "$runs"
done
