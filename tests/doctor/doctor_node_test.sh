#!/usr/bin/env bash
# scripts/doctor-node.sh as a person runs it: `up` gives a tree where doctor finds no failure and
# no warning, with containerd's CRI and the device plugin answering for real; a case laid on top
# is the failure it names; `down` leaves nothing running and no directory, and is safe twice.
#
# Usage: doctor_node_test.sh SOURCE_DIR GPUNODE_BINARY   (exit 77: skipped, with the reason)
set -euo pipefail
script=$1/scripts/doctor-node.sh
PATH=$(dirname "$2"):$PATH

work=$(mktemp -d)
dir=$work/node
trap 'bash "$script" down "$dir" >/dev/null 2>&1 || true; rm -rf "$work"' EXIT

failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }

# field ID NAME: NAME of the finding ID in the JSON report on stdin.
field() {
  python3 -c 'import json, sys
print(next(f[sys.argv[2]] for f in json.load(sys.stdin)["findings"] if f["id"] == sys.argv[1]))' "$@"
}

set +e
out=$(bash "$script" up "$dir" 2>&1)
rc=$?
set -e
if ((rc == 3)); then
  echo "SKIP: $out"
  exit 77
fi
((rc == 0)) || { echo "FAIL: up exited $rc: $out"; exit 1; }
[[ $out == "doctor-node: containerd and gpunode's device plugin (dgx-h100) run for $dir; stop them with scripts/doctor-node.sh down $dir" ]] ||
  fail "up printed: $out"

# A relative --host-root, as the docs give it: the socket checks dial paths relative to it.
set +e
report=$(cd "$work" && gpunode --sim dgx-h100 --host-root node doctor -o json)
rc=$?
set -e
((rc == 0)) || fail "doctor exited $rc"
problems=$(python3 -c 'import json, sys
print(", ".join(f["id"] + " " + f["status"] + ": " + f["summary"]
                for f in json.load(sys.stdin)["findings"] if f["status"] in ("fail", "warn")))' \
  <<<"$report")
[[ -z $problems ]] || fail "doctor: $problems"
for id in runtime.containerd-version runtime.containerd-live plugin.socket plugin.health; do
  status=$(field "$id" status <<<"$report")
  [[ $status == ok ]] || fail "$id is $status: $(field "$id" summary <<<"$report")"
done
[[ $(field plugin.socket summary <<<"$report") == *nvidia-gpu.sock* ]] ||
  fail "plugin.socket: $(field plugin.socket summary <<<"$report")"

pids=$(cat "$dir/run/doctor-node/containerd.pid" "$dir/run/doctor-node/device-plugin.pid")
bash "$script" down "$dir" || fail "down exited $?"
for pid in $pids; do
  if kill -0 "$pid" 2>/dev/null; then fail "pid $pid still runs after down"; fi
done
if pgrep -f -- "$dir" >/dev/null; then fail "processes naming $dir still run: $(pgrep -af -- "$dir")"; fi
[[ ! -e $dir ]] || fail "down left $dir"
bash "$script" down "$dir" || fail "a second down exited $?"

# A broken case on top: containerd loads the case's drop-in as the tree has it.
bash "$script" up "$dir" --case no-handler 2>/dev/null || fail "up --case no-handler exited $?"
report=$(gpunode --sim dgx-h100 --host-root "$dir" doctor -o json || true)
[[ $(field runtime.containerd-config status <<<"$report") == fail ]] ||
  fail "no-handler: runtime.containerd-config is not fail"
[[ $(field runtime.containerd-version status <<<"$report") == ok ]] ||
  fail "no-handler: runtime.containerd-version is not ok"
bash "$script" down "$dir" || fail "down after the case exited $?"

((failures == 0)) || exit 1
echo "PASS"
