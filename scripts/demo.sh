#!/usr/bin/env bash
# Quick start 1: set up, build, and show the simulated default node (8x H100 through NVSwitch).
# Installs only the binary's build dependencies and builds only the binary with what it loads (the
# HTTP module, the simulator); scripts/test.sh adds the test peers and the rest of the tree.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh --build-only
bash scripts/build.sh binary
echo
build/gpunode --sim dgx-h100 inventory
cat <<'NEXT'

Next, on the same simulated node:
  build/gpunode --sim dgx-h100 inventory -o json            # the same as the stable JSON contract
  build/gpunode --sim dgx-h100 labels --oneshot -o -        # the node labels the labeller would set
  build/gpunode --sim dgx-h100 doctor                       # what this host lacks to run GPU pods, layer by layer
  build/gpunode --help                                      # every role
  bash scripts/test.sh                                      # every test (installs the test peers first)
NEXT
