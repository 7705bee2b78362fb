#!/usr/bin/env bash
# Whole-process wall time and peak memory of NVIDIA's `gpu-feature-discovery --oneshot` (k8s-device-plugin
# v0.19.1, from scripts/build-nvidia-tools.sh) and `gpunode labels --oneshot`, in the same run on
# the same simulated node that side_by_side.gfd_labels compares their labels on: the simulator as
# GFD's libnvidia-ml.so.1, an empty PCI tree bound over /sys/bus/pci/devices in a mount namespace
# of its own (GFD reads the bus there and no flag moves it), the same flags. For each profile,
# RUNS runs of each, alternating, after one unmeasured run of each; prints the median and p99 wall
# time in ms, the median peak RSS in MiB, and the ratio of the medians.
# Usage: bench/side_by_side/gfd_labels.sh [build-dir] [runs] [profile...]
#        (default: build 30 dgx-h100 a100-mig)
set -euo pipefail
cd "$(dirname "$0")/../.."

if [[ ${1:-} != --in-namespace ]]; then
  build=$(cd "${1:-build}" && pwd)
  runs=${2:-30}
  profiles=("${@:3}")
  ((${#profiles[@]})) || profiles=(dgx-h100 a100-mig)
  gfd=$(bash scripts/build-nvidia-tools.sh --print-dir)/gpu-feature-discovery
  [[ -x $gfd ]] || { echo "gfd_labels: $gfd is not built: run scripts/build-nvidia-tools.sh" >&2; exit 3; }
  [[ -x /usr/bin/time ]] || { echo "gfd_labels: /usr/bin/time (Debian's time) is missing" >&2; exit 3; }
  reason=$(unshare -rm true 2>&1) || { echo "gfd_labels: unshare -rm: $reason" >&2; exit 3; }
  work=$(mktemp -d)
  trap 'rm -rf "$work"' EXIT
  mkdir -p "$work/lib" "$work/host/sys/bus/pci/devices" "$work/host/sys/class/dmi/id"
  ln -s "$build/libgpunode-sim.so" "$work/lib/libnvidia-ml.so.1"
  echo "PowerEdge XE9680" >"$work/host/sys/class/dmi/id/product_name"
  unshare -rm bash "$0" --in-namespace "$work" "$build" "$runs" "$gfd" "${profiles[@]}"
  exit 0
fi

work=$2
gpunode=$3/gpunode
runs=$4
gfd=$5
mount --bind "$work/host/sys/bus/pci/devices" /sys/bus/pci/devices

# stats NAME: reads "microseconds KiB" lines, prints the median and p99 time and the median peak
# RSS, and sets `median`.
stats() {
  local lines
  lines=$(cat)
  # nth_sorted COLUMN FRACTION: the value at that rank of the column, sorted.
  nth_sorted() {
    cut -d' ' -f"$1" <<<"$lines" | sort -n | awk -v f="$2" '{ v[NR] = $1 } END { print v[int(NR * f + 0.999)] }'
  }
  median=$(awk -v t="$(nth_sorted 1 0.5)" 'BEGIN { printf "%.1f", t / 1000 }')
  p99=$(awk -v t="$(nth_sorted 1 0.99)" 'BEGIN { printf "%.1f", t / 1000 }')
  rss=$(awk -v m="$(nth_sorted 2 0.5)" 'BEGIN { printf "%.1f", m / 1024 }')
  printf '  %-22s median %7.1f ms  p99 %7.1f ms  peak RSS %5.1f MiB\n' "$1" "$median" "$p99" "$rss"
}
# measure PROGRAM ARGS...: one run's wall time (us) and peak RSS (KiB) on one line.
measure() {
  local start end rss
  start=$(date +%s%N)
  rss=$(/usr/bin/time -f %M "$@" 2>&1 >/dev/null | tail -1)
  end=$(date +%s%N)
  echo "$(((end - start) / 1000)) $rss"
}

echo "$("$gfd" --version 2>&1 | grep -m1 -i version); $("$gpunode" version 2>/dev/null | head -1)"
echo "$(nproc) cores ($(sed -n 's/^model name\t*: //p' /proc/cpuinfo | head -1)), Linux $(uname -r)," \
  "load average $(cut -d' ' -f1-3 /proc/loadavg); $runs runs each"
for name in "${@:6}"; do
  strategy=none
  [[ $name == *mig* ]] && strategy=mixed
  gfd_run=(env -i GPUNODE_SIM="$name" LD_LIBRARY_PATH="$work/lib" "$gfd" --oneshot --no-timestamp
    --use-node-feature-api=false --mig-strategy="$strategy"
    --machine-type-file="$work/host/sys/class/dmi/id/product_name" --output-file="$work/gfd")
  gpunode_run=(env -i "$gpunode" --sim "$name" labels --oneshot --no-timestamp --mig-strategy "$strategy"
    --host-root "$work/host" -o "$work/gpunode")
  "${gfd_run[@]}" >/dev/null 2>&1
  "${gpunode_run[@]}" >/dev/null 2>&1
  gfd_times=()
  gpunode_times=()
  for _ in $(seq "$runs"); do
    gfd_times+=("$(measure "${gfd_run[@]}")")
    gpunode_times+=("$(measure "${gpunode_run[@]}")")
  done
  echo "$name --mig-strategy $strategy ($(wc -l <"$work/gfd") labels from GFD, $(wc -l <"$work/gpunode") from gpunode)"
  stats gpu-feature-discovery < <(printf '%s\n' "${gfd_times[@]}")
  gfd_median=$median
  stats "gpunode labels" < <(printf '%s\n' "${gpunode_times[@]}")
  awk -v a="$gfd_median" -v b="$median" 'BEGIN { printf "  GFD / gpunode (medians): %.1f\n", a / b }'
done
