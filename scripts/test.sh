#!/usr/bin/env bash
# Quick start 2 (and CI): set up, build, and run every test: the release build (with the suites
# against the real Kubernetes components, label real-cluster), the same tests but those under
# AddressSanitizer + UndefinedBehaviorSanitizer, the suites that own threads (ctest label
# "threads") under ThreadSanitizer, a short soak, the dist build with one smoke run, and each
# fuzzer for a few seconds.
set -euo pipefail
cd "$(dirname "$0")/.."
fuzz_seconds=${GPUNODE_FUZZ_SECONDS:-5}
# Every flavour's src/ and sim/ must compile without a warning (docs/STYLE.md).
export GPUNODE_WERROR=ON

bash scripts/install-deps.sh
start=$(date +%s)

echo "== the real Kubernetes components, helm, kube-state-metrics and NVIDIA's programs (scripts/build-k8s.sh,
   scripts/build-helm.sh, scripts/build-kube-state-metrics.sh, scripts/build-nvidia-tools.sh: cached after the first build)"
bash scripts/build-k8s.sh
bash scripts/build-helm.sh
bash scripts/build-kube-state-metrics.sh
bash scripts/build-nvidia-tools.sh

echo "== release build, clang-tidy (scripts/tidy.sh) and tests"
bash scripts/build.sh release
bash scripts/tidy.sh build
ctest --test-dir build --output-on-failure -j "$(nproc)"

echo "== AddressSanitizer + UndefinedBehaviorSanitizer build and tests"
bash scripts/build.sh asan
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
  ctest --test-dir build-asan --output-on-failure -j "$(nproc)" -LE 'no-sanitizer|real-cluster'

echo "== ThreadSanitizer build and the suites that own threads"
# build-tsan/ holds only the binary and the suites labelled "threads" (scripts/build.sh). A report
# fails the test (the tests' children, build-tsan/gpunode among them, exit 66). scripts/tsan.supp
# lists the Debian libraries that are not built with ThreadSanitizer, and why. It slows code 5-15
# times: GPUNODE_TEST_TIME_SCALE widens the few bounds that time the binary itself.
bash scripts/build.sh tsan
TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1 suppressions=$PWD/scripts/tsan.supp" \
  GPUNODE_TEST_TIME_SCALE=10 ctest --test-dir build-tsan --output-on-failure -j "$(nproc)" -L threads

echo "== soak, short: 15 simulated minutes of churn in 45 s (docs/RELIABILITY.md)"
bash bench/soak/soak.sh build 45 20

echo "== dist build (the binary as shipped) and a smoke run"
bash scripts/build.sh dist
build-dist/gpunode --sim dgx-h100 inventory >/dev/null

echo "== fuzzers, ${fuzz_seconds}s each"
bash scripts/build.sh fuzz
bash scripts/run-fuzzers.sh build-fuzz "$fuzz_seconds"

echo "== all tests passed in $(( $(date +%s) - start ))s"
