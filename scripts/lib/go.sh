# Sourced by the scripts that build test peers from Go modules (build-k8s.sh, build-helm.sh,
# build-kube-state-metrics.sh, build-nvidia-tools.sh).

# The go flags every peer is built with (as GOFLAGS): the module files as committed, no VCS stamp
# (the module cache has none), paths trimmed, and no DWARF: a peer is never debugged here, and
# without it the compiler takes a quarter less CPU (k8s.io/client-go/kubernetes from an empty
# build cache: 145 -> 109 CPU-seconds; docs/PERFORMANCE.md, "A new machine's full run"). Each
# script links with -s -w besides, with its own version stamp.
peer_goflags="-mod=readonly -buildvcs=false -trimpath -gcflags=all=-dwarf=false"
# The compiler lets its heap grow to five times what is live before it collects, not twice: a
# fifth less CPU for the same package (131 instead of 165 CPU-seconds, both measured beside a C++
# build) for 0.45 GB of memory a compile instead of 0.34.
export GOGC=${GOGC:-400}

# tools_cache PREFIX TOOLS_DIR MODULE VERSION_PATTERN NAME: sets `release` to MODULE's version in
# TOOLS_DIR/go.mod (or says what is wrong under PREFIX and exits 2) and `cache` to the directory
# the binaries go to, keyed by the release and the module files' hash, so that a change of either
# builds anew and another clone reuses them.
tools_cache() {
  local prefix=$1 tools=$2 module=$3 pattern=$4 name=$5 key
  # The requirement's line (a tool block names a module's main package by the module's path too).
  release=$(awk -v module="$module" '$1 == module && $2 ~ /^v/ { print $2; exit }' "$tools/go.mod")
  [[ $release =~ $pattern ]] || {
    echo "$prefix: $tools/go.mod: no $module vX.Y.Z requirement" >&2; exit 2; }
  key=$(cat "$tools/go.mod" "$tools/go.sum" | sha256sum | cut -c1-12)
  cache=${GPUNODE_K8S_CACHE:-/var/cache/gpunode}/$name-$release-$key
}
#
# find_go PREFIX: sets `go` to the machine's Go 1.26 or newer, or says so on stderr under PREFIX
# and exits 2. Debian 12's golang-go (1.19, for the Go gRPC peer) is too old for these modules, and
# no other toolchain is fetched (GOTOOLCHAIN=local).
find_go() {
  go=""
  local candidate
  for candidate in "$(command -v go || true)" /usr/local/go/bin/go; do
    [[ -x $candidate ]] || continue
    if "$candidate" version | grep -Eq 'go1\.(2[6-9]|[3-9][0-9])'; then go=$candidate; return 0; fi
  done
  echo "$1: no Go 1.26 or newer (on PATH or in /usr/local/go/bin); install it" >&2
  exit 2
}
