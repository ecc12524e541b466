#!/usr/bin/env bash
# Sets up the machine and runs every check and test: formatting, clippy, and the whole test suite
# against real Xvfb desktops (DESK_REQUIRE_XVFB=1 turns a missing Xvfb into a failure).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
# One-shot runs gain nothing from incremental caches, which would add gigabytes to target/.
export CARGO_INCREMENTAL="${CARGO_INCREMENTAL:-0}"
cargo fmt --all --check
cargo clippy --workspace --all-targets --locked -- -D warnings
DESK_REQUIRE_XVFB=1 cargo test --workspace --locked
DESK_REQUIRE_XVFB=1 scripts/test-python.sh
