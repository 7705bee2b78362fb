#!/usr/bin/env bash
# Builds the real kube-state-metrics the fleet dashboard's test runs (docs/METRICS.md,
# docs/TESTING.md) from the Go module pinned by tests/tools/go.mod and go.sum (the module of every Go
# test peer, whose shared libraries the Kubernetes build has compiled into Go's build cache), with
# the ordinary go tool, into a cache outside the checkout keyed by the release and the module files'
# hash: a second run (or another clone) costs nothing. Prints the directory that holds the binary.
#
# Usage: scripts/build-kube-state-metrics.sh [--print-dir]   (--print-dir: only say where, build nothing)
set -euo pipefail
cd "$(dirname "$0")/.."
tools=tests/tools
module=k8s.io/kube-state-metrics/v2

source scripts/lib/go.sh
tools_cache build-kube-state-metrics "$tools" "$module" '^v2\.[0-9]+\.[0-9]+$' kube-state-metrics
if [[ ${1:-} == --print-dir ]]; then echo "$cache/bin"; exit 0; fi
if [[ -x $cache/bin/kube-state-metrics ]]; then echo "$cache/bin"; exit 0; fi

find_go build-kube-state-metrics
started=$(date +%s)
mkdir -p "${cache%/*}"
staging=$(mktemp -d "${cache%/*}/.kube-state-metrics-build-XXXXXX")
trap 'rm -rf "$staging"' EXIT
chmod 0755 "$staging"
# The version it reports (--version, kube_state_metrics_build_info), as its own Makefile stamps it.
stamp="-X github.com/prometheus/common/version.Version=$release"
echo "build-kube-state-metrics: kube-state-metrics ($module $release)" >&2
(cd "$tools" && CGO_ENABLED=0 GOFLAGS="$peer_goflags" GOTOOLCHAIN=local \
  "$go" build -ldflags "-s -w $stamp" \
  -o "$staging/bin/kube-state-metrics" "$module")
echo "Built by scripts/build-kube-state-metrics.sh from $tools/go.mod ($module $release) in $(( $(date +%s) - started ))s." >"$staging/SOURCES"
rm -rf "$cache"
mv "$staging" "$cache"
trap - EXIT
echo "build-kube-state-metrics: built kube-state-metrics $release in $(( $(date +%s) - started ))s into $cache/bin" >&2
echo "$cache/bin"
