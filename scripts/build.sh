#!/usr/bin/env bash
# Configures and builds one flavour of the tree. Usage: scripts/build.sh [release|binary|asan|tsan|dist]
# release -> build/ (the binary is build/gpunode), binary -> build/ with only the binary, its HTTP
# module and the simulator (no tests, benchmarks or fuzzers: scripts/demo.sh), asan ->
# build-asan/ (clang: the tests and the libFuzzer targets, under AddressSanitizer and
# UndefinedBehaviorSanitizer), tsan -> build-tsan/ (only the binary and the test suites labelled
# "threads", which own threads), dist -> build-dist/ (the binary as shipped: build-dist/gpunode,
# and next to it the HTTP module and the simulator).
set -euo pipefail
cd "$(dirname "$0")/.."

flavour=${1:-release}
jobs=${GPUNODE_JOBS:-$(nproc)}
export CCACHE_DIR=${CCACHE_DIR:-$HOME/.cache/ccache}
export CCACHE_MAXSIZE=${CCACHE_MAXSIZE:-5G}
# Hash paths relative to the checkout, so another clone of the tree reuses the cache.
export CCACHE_BASEDIR=${CCACHE_BASEDIR:-$PWD}
export CCACHE_NOHASHDIR=${CCACHE_NOHASHDIR:-true}
# Depend mode: on a miss the compiler's own dependency file names the headers, so the
# preprocessor does not run first (about 0.6 s a batch). It hashes a batch's own text, which
# names its sources relative to itself (cmake/unity.cmake), so another clone hits too.
# CCACHE_NODEPEND=1 turns it off.
[[ -n ${CCACHE_NODEPEND:-} ]] || export CCACHE_DEPEND=${CCACHE_DEPEND:-true}

case $flavour in
  # release and binary share build/ and its objects; each sets the options the other changes.
  release) dir=build; args=(-DCMAKE_BUILD_TYPE=RelWithDebInfo -DGPUNODE_TESTS=ON -DGPUNODE_BENCH=ON) ;;
  binary) dir=build; args=(-DCMAKE_BUILD_TYPE=RelWithDebInfo -DGPUNODE_TESTS=OFF -DGPUNODE_BENCH=OFF) ;;
  # With clang, which alone has libFuzzer: the fuzzers and the tests share one sanitized tree
  # instead of compiling the product twice (docs/PERFORMANCE.md, "A new machine's full run").
  asan)
    dir=build-asan
    args=(-DCMAKE_BUILD_TYPE=Debug -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++
          -DGPUNODE_SANITIZE=ON -DGPUNODE_FUZZ=ON -DGPUNODE_BENCH=OFF)
    ;;
  # Optimised, at -O1: ThreadSanitizer slows code 5-15 times and the suites wait on real time, and
  # its documentation names -O1 as enough for reasonable speed; -O2 costs a quarter more to
  # compile (a src/cluster batch: 28.7 CPU-seconds against 22.7). The reports that once kept it at
  # -O2 were our executables' std::string members serving Debian's libraries (CMakeLists.txt).
  tsan)
    dir=build-tsan
    args=(-DCMAKE_BUILD_TYPE=RelWithDebInfo "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O1 -g -DNDEBUG"
          "-DCMAKE_C_FLAGS_RELWITHDEBINFO=-O1 -g -DNDEBUG" -DGPUNODE_TSAN=ON -DGPUNODE_BENCH=OFF)
    ;;
  dist)
    dir=build-dist
    # Compiled with the release build's very flags (its line tables included; the link strips
    # them), so that the compiler cache serves every object the release build made
    # (cmake/shipped_code.cmake); only the link differs.
    args=(-DCMAKE_BUILD_TYPE=RelWithDebInfo -DGPUNODE_STATIC_DIST=ON -DGPUNODE_TESTS=OFF -DGPUNODE_BENCH=OFF)
    ;;
  *) echo "build.sh: unknown flavour '$flavour'; use release, binary, asan, tsan or dist" >&2; exit 2 ;;
esac

# GPUNODE_WERROR=ON (scripts/test.sh sets it) makes a warning in src/ or sim/ an error.
cmake -S . -B "$dir" -G Ninja "${args[@]}" "-DGPUNODE_WERROR=${GPUNODE_WERROR:-OFF}" >/dev/null
if [[ $flavour == tsan ]]; then
  # The binary (with the HTTP module and the simulator) and the suites labelled "threads" in
  # tests/*/CMakeLists.txt; keep this list and those labels together.
  ninja -C "$dir" -j "$jobs" gpunode plugin_integration_test plugin_daemon_test plugin_config_label_test h2grpc_test \
    exporter_test sampler_test gpunode_sim_tests mig_manager_test http_plain_server_test
elif [[ $flavour == dist || $flavour == binary ]]; then
  # The binary (which depends on the HTTP module and the simulator it loads); tests run on the
  # release build.
  ninja -C "$dir" -j "$jobs" gpunode
else
  ninja -C "$dir" -j "$jobs"
fi
