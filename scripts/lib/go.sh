# Sourced by the scripts that build test peers from Go modules (build-k8s.sh, build-helm.sh).
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
