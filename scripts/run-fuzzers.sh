#!/usr/bin/env bash
# Runs every libFuzzer binary in a fuzz build for a fixed time, PARALLEL at a time (default 1: a
# fuzzer runs one process on one core). Usage: run-fuzzers.sh DIR SECONDS [PARALLEL]
# A fuzzer fuzz_<area>_<kind> built from fuzz/<area>/ takes its seeds from fuzz/<area>/corpus/<kind>/
# if present, plus the directories listed in fuzz/<area>/fuzz_<area>_<kind>.seeds (one per line,
# relative to the repository). New inputs go to a scratch corpus that is removed afterwards.
set -euo pipefail
cd "$(dirname "$0")/.."
dir=$1
seconds=$2
parallel=${3:-1}
if ! [[ $parallel =~ ^[1-9][0-9]*$ ]]; then
  echo "run-fuzzers: PARALLEL '$parallel' is not a whole number of at least 1 (how many fuzzers run at once)" >&2
  exit 2
fi
mapfile -t fuzzers < <(find "$dir/fuzz" -type f -executable -not -path '*/CMakeFiles/*' -not -name '*.so*' | sort)
if ((${#fuzzers[@]} == 0)); then
  echo "run-fuzzers: no fuzzers under $dir/fuzz" >&2
  exit 1
fi
# fuzz_one FUZZER: runs it, then prints its report in one piece (runs end in any order).
fuzz_one() {
  local fuzzer=$1 name area work kind seeds=() seed rc=0
  name=$(basename "$fuzzer")
  area=$(basename "$(dirname "$fuzzer")")
  work=$(mktemp -d)
  kind=${name#fuzz_"${area}"_}
  [[ -d fuzz/$area/corpus/$kind ]] && seeds+=("fuzz/$area/corpus/$kind")
  if [[ -f fuzz/$area/$name.seeds ]]; then
    while read -r seed; do
      [[ -n $seed && -d $seed ]] && seeds+=("$seed")
    done <"fuzz/$area/$name.seeds"
  fi
  "$fuzzer" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -print_final_stats=0 "$work" "${seeds[@]}" 2>"$work.log" || rc=$?
  echo "-- $name (${seconds}s, seeds: ${seeds[*]:-none})"
  if ((rc != 0)); then
    tail -50 "$work.log" >&2
    echo "run-fuzzers: $name found a crash" >&2
  else
    grep -E '^(#[0-9]+\s+DONE|Done)' "$work.log" | tail -1 || true
  fi
  rm -rf "$work" "$work.log"
  return "$rc"
}

running=0 failed=0
for fuzzer in "${fuzzers[@]}"; do
  if ((running == parallel)); then
    wait -n || failed=1
    running=$((running - 1))
  fi
  ((failed == 0)) || break
  fuzz_one "$fuzzer" &
  running=$((running + 1))
done
while ((running > 0)); do
  wait -n || failed=1
  running=$((running - 1))
done
exit "$failed"
