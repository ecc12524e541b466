#!/usr/bin/env bash
# Sets up the machine and runs the main job: the CAD benchmark's dev split with the oracle agent
# on the embedded defaults (in-process broker on a Unix socket, SQLite state, a private Xvfb
# desktop with LibreCAD or FreeCAD per task). Results, summary and report.html go to the out
# directory.
# Usage: scripts/bench.sh [OUT_DIR] [extra `deskbroker bench run` flags...]
#   scripts/bench.sh runs/all --split all --jobs 2    # all 50 tasks (about an hour on 2 cores)
# Without --split or --task the dev split runs.
# The judges' own check (no desktop, no agent; every task's gold against held-out perturbations,
# about 2 minutes for all 50 tasks on 2 cores; docs/scoring.md, "Judge validity"):
#   cargo run --release -p deskbroker -- bench validity --split all --jobs 2 --out runs/validity
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-runs/bench-dev}
shift || true
scripts/setup.sh
selection=(--split dev)
for arg in "$@"; do
    case "$arg" in
        --split | --split=* | --task | --task=*) selection=() ;;
    esac
done
cargo run --release --locked -p deskbroker -- bench run "${selection[@]}" --agent oracle --out "$out" "$@"
