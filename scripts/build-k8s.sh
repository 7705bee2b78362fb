#!/usr/bin/env bash
# Builds the real Kubernetes components the real-cluster tests run (docs/TESTING.md): etcd,
# kube-apiserver, kube-scheduler, kube-controller-manager, kubelet and kubectl, from the Go modules
# pinned by tests/tools/go.mod and go.sum (the module of every Go test peer), with the ordinary go
# tool. They go into a cache
# outside the checkout, keyed by the release and by the module files' hash, so that a second run
# (or another clone) costs nothing. Prints the directory that holds the binaries.
#
# Usage: scripts/build-k8s.sh [--print-dir]   (--print-dir: only say where, build nothing)
set -euo pipefail
cd "$(dirname "$0")/.."
tools=tests/tools

source scripts/lib/go.sh
tools_cache build-k8s "$tools" k8s.io/kubernetes '^v1\.[0-9]+\.[0-9]+$' k8s
if [[ ${1:-} == --print-dir ]]; then echo "$cache/bin"; exit 0; fi

binaries=(etcd kube-apiserver kube-scheduler kube-controller-manager kubelet kubectl)
complete=1
for b in "${binaries[@]}"; do [[ -x $cache/bin/$b ]] || complete=0; done
if ((complete)); then echo "$cache/bin"; exit 0; fi

find_go build-k8s
# The version the components report (kubectl version, the Node's kubeletVersion), as Kubernetes'
# own build stamps it; without it they say v0.0.0-master and the version-skew checks misread them.
minor=${release#v1.}; minor=${minor%%.*}
stamp=""
for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
  stamp+=" -X $pkg.gitVersion=$release -X $pkg.gitMajor=1 -X $pkg.gitMinor=$minor"
  stamp+=" -X $pkg.gitTreeState=clean -X $pkg.buildDate=1970-01-01T00:00:00Z"
done

started=$(date +%s)
staging=$(mktemp -d "${cache%/*}/.k8s-build-XXXXXX" 2>/dev/null || { mkdir -p "${cache%/*}"; mktemp -d "${cache%/*}/.k8s-build-XXXXXX"; })
trap 'rm -rf "$staging"' EXIT
chmod 0755 "$staging"
mkdir -p "$staging/bin"
export CGO_ENABLED=0 GOFLAGS="$peer_goflags" GOTOOLCHAIN=local
for b in "${binaries[@]}"; do
  case $b in
    etcd) pkg=go.etcd.io/etcd/server/v3 ;;
    *) pkg=k8s.io/kubernetes/cmd/$b ;;
  esac
  echo "build-k8s: $b ($pkg)" >&2
  (cd "$tools" && "$go" build -ldflags "-s -w$stamp" -o "$staging/bin/$b" "$pkg")
done
cat >"$staging/SOURCES" <<INFO
Built by scripts/build-k8s.sh from $tools/go.mod (k8s.io/kubernetes $release) in $(( $(date +%s) - started ))s.
INFO
rm -rf "$cache"
mv "$staging" "$cache"
trap - EXIT
echo "build-k8s: built ${binaries[*]} for $release in $(( $(date +%s) - started ))s into $cache/bin" >&2
echo "$cache/bin"
