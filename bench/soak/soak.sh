#!/usr/bin/env bash
# The soak of docs/RELIABILITY.md: the device plugin and the exporter on a simulated DGX H100
# for one simulated day (24 h at 48x: 30 minutes), under the churn soak_driver.cc describes.
# Usage: bench/soak/soak.sh [build-dir] [real-seconds] [clock-scale]
# scripts/test.sh runs a short version: bench/soak/soak.sh build 45 20 (15 simulated minutes).
set -euo pipefail
cd "$(dirname "$0")/../.."
build=${1:-build}
seconds=${2:-1800}
scale=${3:-48}
# Unix socket paths must stay short: a directory directly under /tmp.
workdir=$(mktemp -d /tmp/gpunode-soak.XXXXXX)
status=0
"$build/bench/soak/soak_driver" --binary "$build/gpunode" --profile sim/profiles/dgx-h100.yaml \
  --drain-fixture tests/fixtures/cluster/drain.json \
  --duration-s "$seconds" --clock-scale "$scale" --workdir "$workdir" || status=$?
if [[ $status -eq 0 ]]; then rm -rf "$workdir"; else echo "soak: logs kept in $workdir" >&2; fi
exit $status
