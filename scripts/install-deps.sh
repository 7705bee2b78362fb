#!/usr/bin/env bash
# Installs every build and test dependency from Debian 12's archive.
# Usage: scripts/install-deps.sh [--build-only]
# --build-only: only what builds the binary, the simulator and the HTTP module (scripts/demo.sh):
# no test peers, no sanitizer runtimes, no clang, no Go, no NVIDIA driver packages.
# Idempotent: packages already present are left alone, so a second run is quick.
set -euo pipefail

build_only=false
case ${1:-} in
  '') ;;
  --build-only) build_only=true ;;
  *) echo "install-deps.sh: unknown argument '$1'; use --build-only or nothing" >&2; exit 2 ;;
esac

packages=(
  # toolchain
  build-essential cmake ninja-build ccache pkg-config git
  # libraries
  libgrpc++-dev protobuf-compiler-grpc libprotobuf-dev protobuf-compiler libabsl-dev libnghttp2-dev
  libyaml-cpp-dev nlohmann-json3-dev libtomlplusplus-dev libspdlog-dev libfmt-dev libcli11-dev
  libcpp-httplib-dev libsimdjson-dev libcurl4-openssl-dev libssl-dev libmbedtls-dev libpugixml-dev
)
test_packages=(
  # the fuzz build, the sanitizer runtimes, the dist build's linker, the style checks
  clang clang-format clang-tidy-14 libclang-rt-14-dev lld
  # tests and benchmarks
  libgtest-dev libgmock-dev libbenchmark-dev containerd prometheus jq
  # the pods' network on the real kubelet's node (scripts/local-cluster.sh node: ptp, host-local)
  containernetworking-plugins
  # Go's gRPC, the kubelet's library, as a test peer of the device plugin (tests/h2grpc/go_peer)
  golang-go golang-google-grpc-dev golang-google-protobuf-dev
  # GNU time (bench/cluster/audit_vs_jq.sh reads peak RSS); openssl (cluster tests make certificates)
  time openssl
)
# Debian's kubectl: the kubectl plugin test runs `kubectl plugin list` and `kubectl gpunode`. Where
# another package already provides kubectl (both own /usr/bin/kubectl), that one is used.
command -v kubectl >/dev/null || test_packages+=(kubernetes-client)

# NVIDIA's driver user space as Debian packages it (component non-free, driver 535), for the CDI
# tests (tests/cdi), which lay the packages out in a temporary driver root, and NVIDIA's nvml.h
# (libnvidia-ml-dev) with the real libnvidia-ml.so.1 for the ABI checks (tests/nvml). They are
# downloaded into a fixed cache and never installed: installing them pulls in the kernel module
# through dkms. firmware-nvidia-gsp is in non-free-firmware.
nvidia_debs=(
  libcuda1 libnvidia-ml1 libnvidia-ptxjitcompiler1 libnvidia-nvvm4 libnvidia-allocator1
  libnvidia-cfg1 libnvidia-pkcs11-openssl3 nvidia-opencl-icd nvidia-smi nvidia-cuda-mps
  nvidia-persistenced firmware-nvidia-gsp libnvidia-ml-dev
)
nvidia_deb_cache=/var/cache/gpunode/nvidia-debs
if $build_only; then
  nvidia_debs=()
else
  packages+=("${test_packages[@]}")
fi

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
missing_debs=()
for p in "${nvidia_debs[@]}"; do
  compgen -G "$nvidia_deb_cache/${p}_*.deb" >/dev/null || missing_debs+=("$p")
done
if ((${#missing[@]} == 0 && ${#missing_debs[@]} == 0)); then
  if $build_only; then
    echo "install-deps: all ${#packages[@]} build packages present"
  else
    echo "install-deps: all ${#packages[@]} packages present, NVIDIA driver packages in $nvidia_deb_cache"
  fi
  exit 0
fi

if [[ $(id -u) -ne 0 ]]; then
  echo "install-deps: missing packages (${missing[*]} ${missing_debs[*]}); run as root" >&2
  exit 2
fi
export DEBIAN_FRONTEND=noninteractive

# Adds contrib, non-free and non-free-firmware to the Debian archive's entry (not the security
# archive's), in deb822 (Debian 12's /etc/apt/sources.list.d/debian.sources) or one-line format.
# Running it again changes nothing.
enable_non_free() {
  local wanted=(contrib non-free non-free-firmware) file=/etc/apt/sources.list.d/debian.sources
  if [[ -f $file ]]; then
    local c
    for c in "${wanted[@]}"; do
      awk -v c="$c" '
        /^$/ { debian = 0 }
        /^URIs:/ { debian = ($0 ~ /debian\/?$/ && $0 !~ /security/) }
        debian && /^Components:/ { found = 0
          for (i = 2; i <= NF; i++) if ($i == c) found = 1
          if (!found) $0 = $0 " " c }
        { print }' "$file" >"$file.new"
      if cmp -s "$file" "$file.new"; then rm -f "$file.new"; else mv "$file.new" "$file"; fi
    done
  elif [[ -f /etc/apt/sources.list ]]; then
    for c in "${wanted[@]}"; do
      sed -i -E "/^deb .*debian\/? [a-z-]+ /{/security/b;/ $c( |$)/b;s/$/ $c/}" /etc/apt/sources.list
    done
  fi
}
if ((${#missing_debs[@]} > 0)); then enable_non_free; fi
apt-get update -qq
if ((${#missing_debs[@]} > 0)); then
  mkdir -p "$nvidia_deb_cache"
  (cd "$nvidia_deb_cache" && apt-get download -qq "${missing_debs[@]}")
  echo "install-deps: downloaded ${missing_debs[*]} into $nvidia_deb_cache"
fi
if ((${#missing[@]} == 0)); then exit 0; fi
# containerd and prometheus are test peers that the tests start themselves: keep their
# packages from starting system services.
if [[ ! -e /usr/sbin/policy-rc.d ]]; then
  printf '#!/bin/sh\nexit 101\n' >/usr/sbin/policy-rc.d
  chmod 0755 /usr/sbin/policy-rc.d
  trap 'rm -f /usr/sbin/policy-rc.d' EXIT
fi
apt-get install -y -qq --no-install-recommends "${missing[@]}"
echo "install-deps: installed ${missing[*]}"
