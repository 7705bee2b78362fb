#!/usr/bin/env bash
# Builds the real helm the chart's tests run (deploy/helm, docs/TESTING.md) from the Go module
# pinned by tests/tools/go.mod and go.sum (the module of every Go test peer, whose shared libraries
# the Kubernetes build has compiled into Go's build cache), with the ordinary go tool, into a cache
# outside the checkout keyed by the release and the module files' hash: a second run (or another
# clone) costs nothing. Prints the directory that holds the binary.
#
# Usage: scripts/build-helm.sh [--print-dir]   (--print-dir: only say where, build nothing)
set -euo pipefail
cd "$(dirname "$0")/.."
tools=tests/tools

source scripts/lib/go.sh
tools_cache build-helm "$tools" helm.sh/helm/v4 '^v4\.[0-9]+\.[0-9]+$' helm
if [[ ${1:-} == --print-dir ]]; then echo "$cache/bin"; exit 0; fi
if [[ -x $cache/bin/helm ]]; then echo "$cache/bin"; exit 0; fi

find_go build-helm
started=$(date +%s)
mkdir -p "${cache%/*}"
staging=$(mktemp -d "${cache%/*}/.helm-build-XXXXXX")
trap 'rm -rf "$staging"' EXIT
chmod 0755 "$staging"
# `helm version` reports the release, as helm's own build stamps it.
stamp="-X helm.sh/helm/v4/internal/version.version=$release"
echo "build-helm: helm (helm.sh/helm/v4/cmd/helm $release)" >&2
(cd "$tools" && CGO_ENABLED=0 GOFLAGS="$peer_goflags" GOTOOLCHAIN=local \
  "$go" build -ldflags "-s -w $stamp" -o "$staging/bin/helm" \
  helm.sh/helm/v4/cmd/helm)
echo "Built by scripts/build-helm.sh from $tools/go.mod (helm.sh/helm/v4 $release) in $(( $(date +%s) - started ))s." >"$staging/SOURCES"
rm -rf "$cache"
mv "$staging" "$cache"
trap - EXIT
echo "build-helm: built helm $release in $(( $(date +%s) - started ))s into $cache/bin" >&2
echo "$cache/bin"
