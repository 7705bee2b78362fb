#!/usr/bin/env bash
# NVIDIA's gpu-feature-discovery and `gpunode labels` on the same simulated node: every built-in
# profile and every capture of tests/fixtures/nvidia-smi-xml, under each MIG strategy and with a
# time-slicing config. Both must write the same keys with the same values, except the keys that
# docs/LABELS.md ("Beside NVIDIA's GFD") declares different, each of which must still differ
# somewhere (a declaration that no longer holds fails too). GFD reads the PCI bus from
# /sys/bus/pci/devices, which no flag moves: it runs in a mount namespace of its own with an empty
# tree there, so that the build machine's own devices cannot answer for the simulated GPUs.
#
# Usage: gfd_labels_test.sh SOURCE_DIR GPUNODE_BINARY   (exit 77: skipped, with the reason)
set -euo pipefail
source_dir=$1
gpunode=$2
sim_library=$(dirname "$gpunode")/libgpunode-sim.so

tools=$(bash "$source_dir/scripts/build-nvidia-tools.sh" --print-dir)
gfd=$tools/gpu-feature-discovery
if [[ ! -x $gfd ]]; then
  echo "SKIP: NVIDIA's gpu-feature-discovery is not built ($gfd): run scripts/build-nvidia-tools.sh"
  exit 77
fi
if ! reason=$(unshare -rm true 2>&1); then
  echo "SKIP: GFD cannot be given a PCI tree of its own (unshare -rm: $reason)"
  exit 77
fi

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/lib" "$work/host/sys/bus/pci/devices" "$work/host/sys/class/dmi/id"
ln -s "$sim_library" "$work/lib/libnvidia-ml.so.1"
echo "PowerEdge XE9680" >"$work/host/sys/class/dmi/id/product_name"

# The declared differences: the first column of the table under "### Beside NVIDIA's GFD".
mapfile -t declared < <(awk '/^### /{inside = ($0 == "### Beside NVIDIA'"'"'s GFD")}
  inside && /^\| `nvidia.com\// { split($0, cell, "`"); print cell[2] }' "$source_dir/docs/LABELS.md")
((${#declared[@]})) || { echo "docs/LABELS.md declares no differences beside GFD"; exit 1; }
declare -A seen_difference=()
is_declared() { local key; for key in "${declared[@]}"; do [[ $key == "$1" ]] && return 0; done; return 1; }

failures=0
cases=0
compare() { # SPEC NAME STRATEGY [CONFIG]
  local spec=$1 name=$2 strategy=$3 config=${4:-} label="$2 --mig-strategy $3${4:+ --config-file ${4##*/}}"
  local gfd_args=(--oneshot --no-timestamp --use-node-feature-api=false --mig-strategy="$strategy"
    --machine-type-file="$work/host/sys/class/dmi/id/product_name" --output-file="$work/gfd")
  local gpunode_args=(--sim "$spec" labels --oneshot --no-timestamp --mig-strategy "$strategy"
    --host-root "$work/host" -o "$work/gpunode")
  if [[ -n $config ]]; then gfd_args+=(--config-file="$config"); gpunode_args+=(--config-file "$config"); fi
  rm -f "$work/gfd" "$work/gpunode"
  cases=$((cases + 1))
  if ! env -i PATH="$PATH" "$gpunode" "${gpunode_args[@]}" 2>"$work/gpunode.log"; then
    echo "FAIL $label: gpunode labels failed: $(tail -1 "$work/gpunode.log")"; failures=$((failures + 1)); return
  fi
  if ! env -i PATH="$PATH" GPUNODE_SIM="$spec" LD_LIBRARY_PATH="$work/lib" unshare -rm sh -c \
      'mount --bind "$0/host/sys/bus/pci/devices" /sys/bus/pci/devices && exec "$@"' "$work" \
      "$gfd" "${gfd_args[@]}" >"$work/gfd.log" 2>&1; then
    # A capture without <driver_version> is the one node GFD refuses to label (declared in
    # docs/LABELS.md); gpunode labels it without the driver's version.
    if ! grep -q '^nvidia.com/cuda.driver-version.full=' "$work/gpunode" &&
        grep -q 'error getting driver version: Not Supported' "$work/gfd.log"; then
      seen_difference[no-driver-version]=1
      return
    fi
    echo "FAIL $label: GFD failed: $(grep -v '^[ {}]' "$work/gfd.log" | tail -3)"
    failures=$((failures + 1)); return
  fi
  local key
  while IFS= read -r key; do
    local in_gfd in_gpunode
    in_gfd=$(grep -m1 "^$key=" "$work/gfd" || echo "(absent)")
    in_gpunode=$(grep -m1 "^$key=" "$work/gpunode" || echo "(absent)")
    [[ $in_gfd == "$in_gpunode" ]] && continue
    if is_declared "$key"; then seen_difference[$key]=1; continue; fi
    echo "FAIL $label: GFD writes ${in_gfd#"$key="}, gpunode ${in_gpunode#"$key="} for $key"
    failures=$((failures + 1))
  done < <(cat "$work/gfd" "$work/gpunode" | cut -d= -f1 | sort -u)
}

for profile in "$source_dir"/sim/profiles/*.yaml; do
  name=$(basename "$profile" .yaml)
  for strategy in none single mixed; do compare "$name" "$name" "$strategy"; done
done
for capture in "$source_dir"/tests/fixtures/nvidia-smi-xml/*.xml; do
  for strategy in none single mixed; do compare "$capture" "$(basename "$capture")" "$strategy"; done
done
for name in a10-pcie-4 dgx-h100; do
  compare "$name" "$name" none "$source_dir/tests/fixtures/plugin/time-slicing-4.yaml"
done

for key in "${declared[@]}"; do
  if [[ -z ${seen_difference[$key]:-} ]]; then
    echo "FAIL docs/LABELS.md declares $key different beside GFD, but it never differed"
    failures=$((failures + 1))
  fi
done
if [[ -z ${seen_difference[no-driver-version]:-} ]]; then
  echo "FAIL no capture without a driver version was labelled: the declared refusal went untested"
  failures=$((failures + 1))
fi
echo "$cases cases beside $("$gfd" --version | head -1): $failures failures"
((failures == 0))
