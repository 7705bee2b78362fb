#!/usr/bin/env bash
# Installs every build and test dependency from Debian 12's archive.
# Idempotent: packages already present are left alone, so a second run is quick.
set -euo pipefail

packages=(
  # toolchain
  build-essential cmake ninja-build ccache pkg-config git clang clang-format libclang-rt-14-dev
  # libraries
  libgrpc++-dev protobuf-compiler-grpc libprotobuf-dev protobuf-compiler libabsl-dev libnghttp2-dev
  libyaml-cpp-dev nlohmann-json3-dev libtomlplusplus-dev libspdlog-dev libfmt-dev libcli11-dev
  libcpp-httplib-dev libsimdjson-dev libcurl4-openssl-dev libssl-dev libpugixml-dev
  # tests and benchmarks
  libgtest-dev libgmock-dev libbenchmark-dev containerd prometheus jq
  # Go's gRPC, the kubelet's library, as a test peer of the device plugin (tests/h2grpc/go_peer)
  golang-go golang-google-grpc-dev golang-google-protobuf-dev
  # GNU time (bench/cluster/audit_vs_jq.sh reads peak RSS); openssl (cluster tests make certificates)
  time openssl
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if ((${#missing[@]} == 0)); then
  echo "install-deps: all ${#packages[@]} packages present"
  exit 0
fi

if [[ $(id -u) -ne 0 ]]; then
  echo "install-deps: missing packages (${missing[*]}); run as root or install them with apt-get" >&2
  exit 2
fi
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
# containerd and prometheus are test peers that the tests start themselves: keep their
# packages from starting system services.
if [[ ! -e /usr/sbin/policy-rc.d ]]; then
  printf '#!/bin/sh\nexit 101\n' >/usr/sbin/policy-rc.d
  chmod 0755 /usr/sbin/policy-rc.d
  trap 'rm -f /usr/sbin/policy-rc.d' EXIT
fi
apt-get install -y -qq --no-install-recommends "${missing[@]}"
echo "install-deps: installed ${missing[*]}"
