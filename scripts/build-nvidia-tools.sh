#!/usr/bin/env bash
# Builds NVIDIA's own programs that gpunode stands in for, to run beside it on the simulator
# (tests/side_by_side, docs/TESTING.md): nvidia-device-plugin and gpu-feature-discovery from
# github.com/NVIDIA/k8s-device-plugin, pinned by tests/tools/go.mod and go.sum (the module of every
# Go test peer: the plugin is built against the Kubernetes libraries of the real-cluster tests'
# release), and nvidia-ctk from github.com/NVIDIA/nvidia-container-toolkit, pinned by
# tests/tools/ctk. Two modules, because one cannot hold both releases: minimal version selection
# lifts the plugin's go-nvml to the toolkit's v0.13.4-1, whose nvmlPciInfo_t.BusId the plugin's
# internal/rm no longer compiles against. Built with the ordinary go tool into a cache outside the
# checkout keyed by both releases and the module files' hash: a second run (or another clone)
# costs nothing. Prints the directory that holds the binaries.
#
# Usage: scripts/build-nvidia-tools.sh [--print-dir]   (--print-dir: only say where, build nothing)
set -euo pipefail
cd "$(dirname "$0")/.."
tools=tests/tools
ctk_tools=$tools/ctk

source scripts/lib/go.sh
tools_cache build-nvidia-tools "$ctk_tools" github.com/NVIDIA/nvidia-container-toolkit \
  '^v1\.[0-9]+\.[0-9]+$' nvidia
ctk_release=$release
tools_cache build-nvidia-tools "$tools" github.com/NVIDIA/k8s-device-plugin '^v0\.[0-9]+\.[0-9]+$' \
  nvidia
key=$(cat "$tools/go.mod" "$tools/go.sum" "$ctk_tools/go.mod" "$ctk_tools/go.sum" | sha256sum |
  cut -c1-12)
cache=${cache%/*}/nvidia-$release-ctk-$ctk_release-$key
if [[ ${1:-} == --print-dir ]]; then echo "$cache/bin"; exit 0; fi

binaries=(nvidia-device-plugin gpu-feature-discovery nvidia-ctk)
complete=1
for b in "${binaries[@]}"; do [[ -x $cache/bin/$b ]] || complete=0; done
if ((complete)); then echo "$cache/bin"; exit 0; fi

find_go build-nvidia-tools
command -v "${CC:-gcc}" >/dev/null || {
  echo "build-nvidia-tools: go-nvml needs cgo and no C compiler (${CC:-gcc}) is on PATH" >&2; exit 2; }
started=$(date +%s)
mkdir -p "${cache%/*}"
staging=$(mktemp -d "${cache%/*}/.nvidia-build-XXXXXX")
trap 'rm -rf "$staging"' EXIT
chmod 0755 "$staging"
mkdir -p "$staging/bin"
# go-nvml reaches libnvidia-ml.so.1 through dlopen, through cgo, so the programs are linked as
# NVIDIA's Makefiles link them: NVML's symbols stay unresolved until the library is loaded, and
# the version is stamped where `--version` reads it.
# go-nvml declares every NVML entry point, deprecated ones too; the warnings say nothing of use.
export CGO_ENABLED=1 CGO_CFLAGS="-O2 -g -Wno-deprecated-declarations" GOFLAGS="$peer_goflags" GOTOOLCHAIN=local
extldflags='-Wl,--export-dynamic -Wl,--unresolved-symbols=ignore-in-object-files -Wl,-z,lazy'
# The pure-Go DNS resolver and user lookup (netgo, osusergo: the programs reach the kubelet and the
# API server by socket and address, never by a name libc would resolve): with them the standard
# library's net compiles as in the other peers' cgo-free builds, so every package they share with
# the Kubernetes components comes from Go's build cache instead of compiling again.
build() { # DIR MODULE RELEASE NAME
  echo "build-nvidia-tools: $4 ($2/cmd/$4 $3)" >&2
  (cd "$1" && "$go" build -tags netgo,osusergo \
    -ldflags "-s -w '-extldflags=$extldflags' -X $2/internal/info.version=$3" \
    -o "$staging/bin/$4" "$2/cmd/$4")
}
build "$tools" github.com/NVIDIA/k8s-device-plugin "$release" nvidia-device-plugin
build "$tools" github.com/NVIDIA/k8s-device-plugin "$release" gpu-feature-discovery
build "$ctk_tools" github.com/NVIDIA/nvidia-container-toolkit "$ctk_release" nvidia-ctk
cat >"$staging/SOURCES" <<INFO
Built by scripts/build-nvidia-tools.sh in $(( $(date +%s) - started ))s:
nvidia-device-plugin, gpu-feature-discovery: github.com/NVIDIA/k8s-device-plugin $release ($tools/go.mod)
nvidia-ctk: github.com/NVIDIA/nvidia-container-toolkit $ctk_release ($ctk_tools/go.mod)
INFO
rm -rf "$cache"
mv "$staging" "$cache"
trap - EXIT
echo "build-nvidia-tools: built ${binaries[*]} in $(( $(date +%s) - started ))s into $cache/bin" >&2
echo "$cache/bin"
