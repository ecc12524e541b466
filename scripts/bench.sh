#!/usr/bin/env bash
# Sets up the machine and runs the main job: the CAD benchmark's dev split with the oracle agent
# on the embedded defaults (in-process broker on a Unix socket, SQLite state, a private Xvfb
# desktop with LibreCAD per task). Results, summary and report.html go to the out directory.
# Usage: scripts/bench.sh [OUT_DIR] [extra `deskbroker bench run` flags...]
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-runs/bench-dev}
shift || true
scripts/setup.sh
cargo run --release --locked -p deskbroker -- bench run --split dev --agent oracle --out "$out" --log warn "$@"
