#!/usr/bin/env bash
# Quick start 2 (and CI): set up, build, and run every test: the release build (with the suites
# against the real Kubernetes components, label real-cluster), the same tests but those under
# AddressSanitizer + UndefinedBehaviorSanitizer (clang; the fuzzers come from the same tree), the
# suites that own threads (ctest label "threads") under ThreadSanitizer, a short soak, the dist
# build with one smoke run, and each fuzzer for a few seconds.
#
# The test suites leave about half of the machine's CPU idle (they wait on API servers, kubelets,
# containers and timeouts), so the next build runs beside each suite at the lowest CPU priority
# (nice 19): the tests keep the CPU they ask for and the build takes what they leave. The Go test
# peers build the same way beside the release build. A background step's output follows in one
# piece when it ends; a failure of either side fails the run, and the other side is stopped.
# docs/PERFORMANCE.md ("A new machine's full run") has what each stage costs.
set -euo pipefail
cd "$(dirname "$0")/.."
fuzz_seconds=${GPUNODE_FUZZ_SECONDS:-3}
# Every flavour's src/ and sim/ must compile without a warning (docs/STYLE.md).
export GPUNODE_WERROR=ON

bash scripts/install-deps.sh
start=$(date +%s)

# stage TEXT: a header, with the minutes and seconds since the start (what each stage costs).
stage() {
  local t=$(($(date +%s) - start))
  printf '== [%d:%02d] %s\n' $((t / 60)) $((t % 60)) "$*"
}

beside_name="" beside_pid="" beside_log=""
# beside NAME COMMAND...: starts COMMAND at nice 19 in a process group of its own (job control on
# for the start: the group can be stopped whole), its output kept apart. Not in a session of its
# own: with the kernel's autogroups, each session shares the CPU equally whatever its nice.
beside() {
  beside_name=$1
  shift
  beside_log=$(mktemp)
  stage "$beside_name: started beside what follows (nice 19)"
  set -m
  nice -n 19 "$@" >"$beside_log" 2>&1 &
  beside_pid=$!
  set +m
}
# finish: waits for the step started by beside and prints its output; a failure ends the run.
finish() {
  local rc=0
  wait "$beside_pid" || rc=$?
  beside_pid=""
  stage "$beside_name: done; its output follows"
  cat "$beside_log"
  rm -f "$beside_log"
  if ((rc != 0)); then
    echo "test.sh: $beside_name failed (exit $rc)" >&2
    exit 1
  fi
}
# A failure in the foreground stops the step beside it (its whole group: ninja, the compilers).
stop_beside() {
  [[ -z $beside_pid ]] || kill -- "-$beside_pid" 2>/dev/null || true
  rm -f "$beside_log"
}
trap stop_beside EXIT

beside "the real Kubernetes components, helm, kube-state-metrics and NVIDIA's programs (cached after the first build)" \
  bash -c 'bash scripts/build-k8s.sh && bash scripts/build-helm.sh &&
           bash scripts/build-kube-state-metrics.sh && bash scripts/build-nvidia-tools.sh'

stage "release build"
bash scripts/build.sh release
finish

beside "clang-tidy (scripts/tidy.sh), then the AddressSanitizer + UndefinedBehaviorSanitizer build (clang, with the fuzzers)" \
  bash -c 'bash scripts/tidy.sh build && bash scripts/build.sh asan'
stage "release tests"
ctest --test-dir build --output-on-failure -j "$(nproc)"
finish

beside "ThreadSanitizer build (the binary and the suites that own threads)" bash scripts/build.sh tsan
stage "AddressSanitizer + UndefinedBehaviorSanitizer tests"
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
  ctest --test-dir build-asan --output-on-failure -j "$(nproc)"
finish

beside "dist build (the binary as shipped)" bash scripts/build.sh dist
stage "ThreadSanitizer tests: the suites that own threads"
# build-tsan/ holds only the binary and the suites labelled "threads" (scripts/build.sh). A report
# fails the test (the tests' children, build-tsan/gpunode among them, exit 66). scripts/tsan.supp
# lists the Debian libraries that are not built with ThreadSanitizer, and why. It slows code 5-15
# times: GPUNODE_TEST_TIME_SCALE widens the few bounds that time the binary itself.
TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1 suppressions=$PWD/scripts/tsan.supp" \
  GPUNODE_TEST_TIME_SCALE=10 ctest --test-dir build-tsan --output-on-failure -j "$(nproc)" -L threads
finish

# Alone: the soak holds real-time goals (a registration within 5 s, 100,000 scrapes in 45 s).
stage "soak, short: 15 simulated minutes of churn in 45 s (docs/RELIABILITY.md)"
bash bench/soak/soak.sh build 45 20

stage "dist smoke run; the dist build's objects compiled as the release build's, and no definition naming the checkout"
build-dist/gpunode --sim dgx-h100 inventory >/dev/null
python3 scripts/lib/same_compiles.py build build-dist
python3 scripts/lib/no_checkout_definitions.py . build build-asan build-tsan build-dist

stage "fuzzers, ${fuzz_seconds}s each, $(nproc) at a time"
bash scripts/run-fuzzers.sh build-asan "$fuzz_seconds" "$(nproc)"

stage "all tests passed in $(( $(date +%s) - start ))s"
