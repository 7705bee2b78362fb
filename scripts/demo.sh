#!/usr/bin/env bash
# Quick start 1: set up, build, and show the simulated default node (8x H100 through NVSwitch).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
bash scripts/build.sh release
echo
build/gpunode --sim dgx-h100 inventory
