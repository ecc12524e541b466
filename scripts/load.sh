#!/usr/bin/env bash
# Builds deskbroker and the desk-probe window (release) and runs the load benchmark with its
# defaults: 8 concurrent probe sessions × 300 actions each through the real API, then checks the
# probe logs and that nothing is left behind. Prints a table; the JSON report goes to OUT.
# Usage: scripts/load.sh [OUT_JSON] [extra `deskbroker load` flags, e.g. --actions 100]
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-runs/load/load-report.json}
shift || true
scripts/setup.sh
mkdir -p "$(dirname "$out")"
cargo build --release --locked -p deskbroker -p desk-test-support --bins
started=$(date +%s)
target/release/deskbroker load --json "$out" --log warn "$@"
echo "load: finished in $(( $(date +%s) - started )) s"
