#!/usr/bin/env bash
# Sets up the machine and runs the main job: a local broker drives LibreCAD on a private Xvfb
# desktop through broker actions, checkpoints, retrieves and checks the DXF. Extra arguments go
# to `deskbroker demo` (see `deskbroker demo --help`).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
cargo run --release --locked -p deskbroker -- demo "$@"
