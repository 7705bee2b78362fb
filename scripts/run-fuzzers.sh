#!/usr/bin/env bash
# Runs every libFuzzer binary in a fuzz build for a fixed time. Usage: run-fuzzers.sh DIR SECONDS
# A fuzzer fuzz_<area>_<kind> built from fuzz/<area>/ takes its seeds from fuzz/<area>/corpus/<kind>/
# if present, plus the directories listed in fuzz/<area>/fuzz_<area>_<kind>.seeds (one per line,
# relative to the repository). New inputs go to a scratch corpus that is removed afterwards.
set -euo pipefail
cd "$(dirname "$0")/.."
dir=$1
seconds=$2
mapfile -t fuzzers < <(find "$dir/fuzz" -type f -executable -not -path '*/CMakeFiles/*' -not -name '*.so*' | sort)
if ((${#fuzzers[@]} == 0)); then
  echo "run-fuzzers: no fuzzers under $dir/fuzz" >&2
  exit 1
fi
for fuzzer in "${fuzzers[@]}"; do
  name=$(basename "$fuzzer")
  area=$(basename "$(dirname "$fuzzer")")
  work=$(mktemp -d)
  seeds=()
  kind=${name#fuzz_"${area}"_}
  [[ -d fuzz/$area/corpus/$kind ]] && seeds+=("fuzz/$area/corpus/$kind")
  if [[ -f fuzz/$area/$name.seeds ]]; then
    while read -r seed; do
      [[ -n $seed && -d $seed ]] && seeds+=("$seed")
    done <"fuzz/$area/$name.seeds"
  fi
  echo "-- $name (${seconds}s, seeds: ${seeds[*]:-none})"
  "$fuzzer" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -print_final_stats=0 "$work" "${seeds[@]}" 2>"$work.log" || {
    tail -50 "$work.log" >&2
    echo "run-fuzzers: $name found a crash" >&2
    exit 1
  }
  grep -E '^(#[0-9]+\s+DONE|Done)' "$work.log" | tail -1 || true
  rm -rf "$work" "$work.log"
done
