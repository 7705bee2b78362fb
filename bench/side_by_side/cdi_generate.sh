#!/usr/bin/env bash
# Whole-process wall time of NVIDIA's `nvidia-ctk cdi generate` (v1.20.2, from
# scripts/build-nvidia-tools.sh) and `gpunode cdi generate`, in the same run on the same simulated
# node that side_by_side.cdi_generate compares them on (tests/side_by_side/cdi_node.sh: the driver
# root of Debian's NVIDIA 535 packages, the simulator as its NVML, in a mount namespace), with the
# same flags. For each profile, RUNS runs of each, alternating, after one unmeasured run of each;
# prints the median and p99 of each in ms and the ratio of the medians.
# Usage: bench/side_by_side/cdi_generate.sh [build-dir] [runs] [profile...]
#        (default: build 30 dgx-h100 a100-mig)
set -euo pipefail
cd "$(dirname "$0")/../.."
source_dir=$PWD
source tests/side_by_side/cdi_node.sh

if [[ ${1:-} != --in-namespace ]]; then
  build=$(cd "${1:-build}" && pwd)
  runs=${2:-30}
  profiles=("${@:3}")
  ((${#profiles[@]})) || profiles=(dgx-h100 a100-mig)
  cdi_node_check "$source_dir" || exit $?
  work=$(mktemp -d)
  trap 'rm -rf "$work"' EXIT
  cdi_node_prepare "$source_dir" "$work" || exit $?
  export cdi_node_ctk
  unshare -rm bash "$0" --in-namespace "$work" "$build" "$runs" "${profiles[@]}"
  exit 0
fi

work=$2
gpunode=$3/gpunode
runs=$4
cdi_node_enter "$work" "$3/libgpunode-sim.so"

# stats NAME: reads one time a line (us), prints "NAME median M ms p99 P ms" and sets `median`.
stats() {
  local line
  line=$(sort -n | awk -v name="$1" '{ t[NR] = $1 }
    END { printf "%s %.1f %.1f\n", name, t[int((NR + 1) / 2)] / 1000, t[int(NR * 0.99 + 0.999)] / 1000 }')
  read -r _ median p99 <<<"$line"
  printf '  %-10s median %7.1f ms  p99 %7.1f ms\n' "$1" "$median" "$p99"
}
# now_us: the clock in microseconds.
now_us() { echo $(($(date +%s%N) / 1000)); }

echo "$("$cdi_node_ctk" --version | head -1); $("$gpunode" version 2>/dev/null | head -1)"
echo "$(nproc) cores ($(sed -n 's/^model name\t*: //p' /proc/cpuinfo | head -1)), Linux $(uname -r)," \
  "load average $(cut -d' ' -f1-3 /proc/loadavg); $runs runs each"
for name in "${@:5}"; do
  spec=$work/profiles/$name.yaml
  ctk_times=()
  gpunode_times=()
  cdi_node_nvidia_ctk "$work" "$spec" "$work/nvidia-ctk.json" 2>/dev/null
  cdi_node_gpunode "$work" "$gpunode" "$spec" "$work/gpunode.json" 2>/dev/null
  for _ in $(seq "$runs"); do
    start=$(now_us)
    cdi_node_nvidia_ctk "$work" "$spec" "$work/nvidia-ctk.json" 2>/dev/null
    ctk_times+=($(($(now_us) - start)))
    start=$(now_us)
    cdi_node_gpunode "$work" "$gpunode" "$spec" "$work/gpunode.json" 2>/dev/null
    gpunode_times+=($(($(now_us) - start)))
  done
  echo "$name ($(jq '.devices | length' "$work/gpunode.json") devices in gpunode's spec," \
    "$(jq '.devices | length' "$work/nvidia-ctk.json") in nvidia-ctk's)"
  stats nvidia-ctk < <(printf '%s\n' "${ctk_times[@]}")
  ctk_median=$median
  stats gpunode < <(printf '%s\n' "${gpunode_times[@]}")
  awk -v a="$ctk_median" -v b="$median" 'BEGIN { printf "  nvidia-ctk / gpunode (medians): %.1f\n", a / b }'
done
