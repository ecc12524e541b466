#!/usr/bin/env bash
# Sets up the machine and runs the main job: the CAD benchmark's dev split with the oracle agent
# on the embedded defaults (in-process broker on a Unix socket, SQLite state, a private Xvfb
# desktop with LibreCAD or FreeCAD per task). Results, summary and report.html go to the out
# directory.
# Usage: scripts/bench.sh [OUT_DIR] [extra `deskbroker bench run` flags...]
#   scripts/bench.sh runs/all --split all --jobs 2    # all 50 tasks (about an hour on 2 cores)
# Without --split or --task the dev split runs.
# With --gate the run's broker enforces scripts/bench-gate-policy.yaml (the default workspace plus
# a screenshot_gate section; no approvals), signed with a fresh policy key in OUT_DIR/gate-policy:
# every frame passes the screenshot gate (docs/screenshot-gate.md, "The benchmark with the gate").
#   scripts/bench.sh runs/gate --gate --task task-004 --task task-025
# The judges' own check (no desktop, no agent; every task's gold against held-out perturbations,
# about 2 minutes for all 50 tasks on 2 cores; docs/scoring.md, "Judge validity"):
#   cargo run --release -p deskbroker -- bench validity --split all --jobs 2 --out runs/validity
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-runs/bench-dev}
shift || true
scripts/setup.sh
selection=(--split dev)
gate=()
args=()
for arg in "$@"; do
    case "$arg" in
        --split | --split=* | --task | --task=*) selection=() ;;
    esac
    if [ "$arg" = --gate ]; then
        gate=(--policy "$out/gate-policy/policy.signed" --policy-pub "$out/gate-policy/policy.pub")
    else
        args+=("$arg")
    fi
done
cargo build --release --locked -p deskbroker
if [ ${#gate[@]} -gt 0 ]; then
    rm -rf "$out/gate-policy"
    mkdir -p "$out"
    target/release/deskbroker policy keygen --out-dir "$out/gate-policy"
    target/release/deskbroker policy sign scripts/bench-gate-policy.yaml \
        --key "$out/gate-policy/policy.key" --out "$out/gate-policy/policy.signed"
fi
target/release/deskbroker bench run "${selection[@]}" --agent oracle --out "$out" "${gate[@]}" "${args[@]}"
target/release/deskbroker load --desktops librecad=1,freecad=1 --json "$out/load-desktops.json" --log warn
