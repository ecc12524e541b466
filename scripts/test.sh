#!/usr/bin/env bash
# Sets up the machine and runs every check and test: formatting, clippy, and the whole test suite
# against real Xvfb desktops (DESK_REQUIRE_XVFB=1 turns a missing Xvfb into a failure).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
# One-shot runs gain nothing from incremental caches, which would add gigabytes to target/.
export CARGO_INCREMENTAL="${CARGO_INCREMENTAL:-0}"
# The Python venvs (minutes of pip installs on a fresh machine) fill in the background while
# cargo builds; test-python.sh waits for nothing itself, so this script waits before it.
mkdir -p target
scripts/python-venvs.sh > target/python-venvs.log 2>&1 &
venvs_pid=$!
trap 'kill "$venvs_pid" 2>/dev/null || true' EXIT
cargo fmt --all --check
cargo clippy --workspace --all-targets --locked -- -D warnings
# The Windows worker, cross-compiled (its Win32 code only builds for Windows; docs/windows.md).
cargo build --locked --target x86_64-pc-windows-gnu -p desk-win
cargo clippy --locked --target x86_64-pc-windows-gnu -p desk-win --all-targets -- -D warnings
# The test output goes to target/test-output.log as well; a failure ends with each failing
# test's panic message (without the backtraces), so the reason is in the last lines a CI shows.
set +e
DESK_REQUIRE_XVFB=1 cargo test --workspace --locked 2>&1 | tee target/test-output.log
status=${PIPESTATUS[0]}
set -e
if [ "$status" -ne 0 ]; then
  echo "== why the failing tests failed (full output: target/test-output.log) =="
  grep -E -A8 "^---- .* (stdout|stderr) ----$|panicked at" target/test-output.log \
    | grep -v -E "^ +[0-9]+: |^ +at |^stack backtrace:|^note: " | tail -n 60
  exit "$status"
fi
# The Windows worker under Wine on Xvfb driving Wine's notepad through the worker protocol
# (about 15 s; 30 s when the Wine prefix is new). Skipped, and said so, where wine is missing.
if command -v wine >/dev/null; then
  DESK_REQUIRE_XVFB=1 scripts/wine-conformance.sh
else
  echo "test: wine is not installed (scripts/setup.sh installs it); the Wine conformance run is skipped"
fi
if ! wait "$venvs_pid"; then
  echo "test: creating the Python venvs failed:" >&2
  cat target/python-venvs.log >&2
  exit 1
fi
DESK_REQUIRE_XVFB=1 scripts/test-python.sh
