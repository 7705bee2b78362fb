#!/usr/bin/env bash
# NVIDIA's `nvidia-ctk cdi generate` and `gpunode cdi generate` on the same simulated node: the
# driver root of Debian's NVIDIA packages (tests/cdi/driver_root.sh), every built-in simulator
# profile and every Linux capture of tests/fixtures/nvidia-smi-xml (MIG nodes among them), the
# same dev root and hook program. Both specs are reduced to sets of facts (each device's name and
# device nodes; the common edits' env, device nodes, mounts with their options, and hooks, one
# fact per link or folder; the driver root written <root>), and must hold the same facts, except
# those docs/CDI.md ("### Beside nvidia-ctk cdi generate") declares one side's alone, each of which
# must still differ somewhere (a declaration that no longer holds fails too). nvidia-ctk's spec
# must also pass `gpunode cdi validate`. Why a mount namespace: tests/side_by_side/cdi_node.sh.
#
# Usage: cdi_generate_test.sh SOURCE_DIR GPUNODE_BINARY   (exit 77: skipped, with the reason)
set -euo pipefail
source_dir=$1
gpunode=$2
source "$source_dir/tests/side_by_side/cdi_node.sh"

if [[ ${3:-} != --in-namespace ]]; then
  cdi_node_check "$source_dir" || exit $?
  work=$(mktemp -d)
  trap 'rm -rf "$work"' EXIT
  cdi_node_prepare "$source_dir" "$work" || exit $?
  mkdir "$work/captures"
  for capture in "$source_dir"/tests/fixtures/nvidia-smi-xml/*.xml; do
    # A capture without device minor numbers (from Windows: N/A; the reduced RTX PRO 6000
    # excerpt: none) names no /dev/nvidia<N>, and nvidia-ctk refuses the node outright.
    if ! grep -q '<minor_number>[0-9]' "$capture"; then continue; fi
    sed -E "s|<driver_version>[^<]*</driver_version>|<driver_version>$cdi_node_version</driver_version>|" \
      "$capture" >"$work/captures/${capture##*/}"
  done
  export cdi_node_ctk
  unshare -rm bash "$0" "$source_dir" "$gpunode" --in-namespace "$work"
  exit 0
fi

work=$4
cdi_node_enter "$work" "$(dirname "$gpunode")/libgpunode-sim.so"

# The declared differences: the first two columns of the table under the heading.
declared=()
declared_side=()
while IFS='|' read -r _ pattern side _; do
  pattern=${pattern#*\`}
  declared+=("${pattern%\`*}")
  side=${side// /}
  declared_side+=("$side")
done < <(awk '/^#+ /{inside = ($0 == "### Beside nvidia-ctk cdi generate")}
  inside && /^\| `/' "$source_dir/docs/CDI.md")
((${#declared[@]})) || { echo "docs/CDI.md declares no differences beside nvidia-ctk"; exit 1; }
declare -A seen=()

# One fact a line: tests/side_by_side/cdi_facts.jq.
facts() {
  jq -r --arg root "$work/driver" -f "$source_dir/tests/side_by_side/cdi_facts.jq" "$1" | sort -u
}

failures=0
cases=0
fail() { echo "FAIL $*"; failures=$((failures + 1)); }
# differ CASE SIDE FILE: each fact in FILE (SIDE's alone) must be declared SIDE's.
differ() {
  local fact i
  while IFS= read -r fact; do
    for i in "${!declared[@]}"; do
      # The declaration is a glob: unquoted on the right of ==.
      if [[ ${declared_side[i]} == "$2" && $fact == ${declared[i]} ]]; then
        seen[$i]=1
        continue 2
      fi
    done
    fail "$1: only $2 writes: $fact"
  done <"$3"
}

for spec in "$work"/profiles/*.yaml "$work"/captures/*.xml; do
  name=${spec##*/}
  cases=$((cases + 1))
  rm -f "$work"/{nvidia-ctk,gpunode}.json
  if ! cdi_node_nvidia_ctk "$work" "$spec" "$work/nvidia-ctk.json" 2>"$work/nvidia-ctk.log"; then
    fail "$name: nvidia-ctk cdi generate failed: $(grep -v 'level=info\|level=warning' \
      "$work/nvidia-ctk.log" | tail -3)"
    continue
  fi
  if ! cdi_node_gpunode "$work" "$gpunode" "$spec" "$work/gpunode.json" 2>"$work/gpunode.log"; then
    fail "$name: gpunode cdi generate failed: $(tail -3 "$work/gpunode.log")"
    continue
  fi
  if ! valid=$("$gpunode" cdi validate "$work/nvidia-ctk.json" 2>&1); then
    fail "$name: gpunode cdi validate refuses nvidia-ctk's spec: $valid"
  fi
  facts "$work/nvidia-ctk.json" >"$work/nvidia-ctk.facts"
  facts "$work/gpunode.json" >"$work/gpunode.facts"
  comm -23 "$work/nvidia-ctk.facts" "$work/gpunode.facts" >"$work/only-nvidia-ctk"
  comm -13 "$work/nvidia-ctk.facts" "$work/gpunode.facts" >"$work/only-gpunode"
  differ "$name" nvidia-ctk "$work/only-nvidia-ctk"
  differ "$name" gpunode "$work/only-gpunode"
done

for i in "${!declared[@]}"; do
  if [[ -z ${seen[$i]:-} ]]; then
    fail "docs/CDI.md declares \`${declared[i]}\` ${declared_side[i]}'s alone, but it never differed"
  fi
done
echo "$cases cases beside $("$cdi_node_ctk" --version | head -1): $failures failures"
((failures == 0))
