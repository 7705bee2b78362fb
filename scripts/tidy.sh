#!/usr/bin/env bash
# Runs clang-tidy with the repository's .clang-tidy over src/ and sim/, translation unit by
# translation unit as a configured build compiles them (its unity batches: a batch's headers are
# parsed once, not once per file). Usage: scripts/tidy.sh [BUILD_DIR] (default build/). Prints
# each finding; exits 1 when there is one (every check is an error).
#
# A unit that passed is remembered under ~/.cache/gpunode/tidy by the hash of its files, of every
# header and proto of the tree, of .clang-tidy and of clang-tidy's version: after a change to one
# .cc only its batch is checked again; after a change to a header, all of them.
set -euo pipefail
cd "$(dirname "$0")/.."
dir=${1:-build}
tidy=$(command -v clang-tidy-14 || command -v clang-tidy || true)
if [[ -z $tidy ]]; then
  echo "tidy: clang-tidy is not installed; scripts/install-deps.sh installs clang-tidy-14" >&2
  exit 2
fi
if [[ ! -f $dir/compile_commands.json ]]; then
  echo "tidy: $dir/compile_commands.json is missing; configure the build first (scripts/build.sh release)" >&2
  exit 2
fi
jobs=${GPUNODE_JOBS:-$(nproc)}
cache=${GPUNODE_TIDY_CACHE:-$HOME/.cache/gpunode/tidy}
mkdir -p "$cache"
root=$PWD

# The units of src/ and sim/: a unity batch (its .cxx includes the .cc files it compiles) or a
# file compiled alone.
mapfile -t units < <(python3 - "$dir" "$root" <<'PY'
import json, sys
build, root = sys.argv[1], sys.argv[2]
for entry in json.load(open(f"{build}/compile_commands.json")):
    f = entry["file"]
    for tree in ("src", "sim"):
        if f.startswith(f"{root}/{tree}/") or "/unity/" in f and f.startswith(
                f"{entry['directory']}/{tree}/"):
            print(f)
            break
PY
)
tree_hash=$({ "$tidy" --version; cat .clang-tidy
              find src sim proto -name '*.h' -o -name '*.proto' | sort | xargs sha256sum; } |
            sha256sum | cut -c1-32)
unit_key() {  # a batch (cmake/unity.cmake) by the sources it includes, relative to itself; a
  # file compiled alone by its text
  { echo "$tree_hash"
    if [[ $1 == */unity/* ]]; then
      (cd "${1%/*}" && sed -n 's/^#include "\(.*\)"$/\1/p' "${1##*/}" | xargs cat)
    else
      cat "$1"
    fi; } | sha256sum | cut -c1-32
}
todo=()
for unit in "${units[@]}"; do
  [[ -e $cache/$(unit_key "$unit") ]] || todo+=("$unit")
done

out=$(mktemp)
trap 'rm -f "$out"' EXIT
if ((${#todo[@]} > 0)); then
  # -Wno-unknown-warning-option: the commands carry GCC's warning flags, which clang does not know.
  printf '%s\0' "${todo[@]}" |
    xargs -0 -n 1 -P "$jobs" "$tidy" -p "$dir" --quiet --extra-arg=-Wno-unknown-warning-option \
    >"$out" 2>&1 || true
fi
findings=$(grep -E '^[^ ]+:[0-9]+:[0-9]+: (error|warning):' "$out" | sort -u || true)
if [[ -n $findings ]]; then
  grep -vE '^[0-9]+ (warnings?|errors?) (generated|and [0-9]+ errors? generated)\.$' "$out"
  echo "tidy: $(wc -l <<<"$findings") finding(s) in ${#todo[@]} unit(s) checked" >&2
  exit 1
fi
for unit in "${todo[@]}"; do touch "$cache/$(unit_key "$unit")"; done
echo "tidy: ${#units[@]} units of src/ and sim/, no finding (${#todo[@]} checked now, the rest unchanged since they passed)"
