#!/usr/bin/env bash
# Cross-compiles the Windows worker (desk-win) for x86_64-pc-windows-gnu, builds the
# bcryptprimitives.dll stand-in Wine 8.0 lacks, and runs desk-win's Wine test: the worker under
# Wine on Xvfb drives Wine's notepad through the worker protocol (docs/windows.md). CI runs it
# (scripts/test.sh) when wine is installed. Needs: rustup target x86_64-pc-windows-gnu,
# gcc-mingw-w64-x86-64, wine64, xvfb (scripts/setup.sh installs them). Prints the measured
# timings and the capture path's reason.
#
#   scripts/wine-conformance.sh            # debug build
#   PROFILE=release scripts/wine-conformance.sh
set -euo pipefail
cd "$(dirname "$0")/.."
target=x86_64-pc-windows-gnu
profile=${PROFILE:-debug}
for tool in x86_64-w64-mingw32-gcc wine wineserver Xvfb; do
  command -v "$tool" >/dev/null || { echo "wine-conformance: $tool not found (scripts/setup.sh installs it)" >&2; exit 1; }
done
rustup target list --installed 2>/dev/null | grep -qx "$target" || rustup target add "$target"
cargo_profile=()
[ "$profile" = release ] && cargo_profile=(--release)
cargo build --locked --target "$target" -p desk-win "${cargo_profile[@]}"
target_dir=$(cargo metadata --format-version 1 --no-deps | python3 -c 'import json,sys; print(json.load(sys.stdin)["target_directory"])')
out="$target_dir/$target/$profile"
# Rust's standard library imports ProcessPrng from bcryptprimitives.dll, which Wine 8.0 does not
# ship; the stand-in beside the executable is loaded first. A real Windows host has the DLL.
x86_64-w64-mingw32-gcc -shared -O2 -o "$out/bcryptprimitives.dll" \
  crates/desk-win/wine/bcryptprimitives.c crates/desk-win/wine/bcryptprimitives.def -ladvapi32
# A private Wine prefix, created once (wineboot takes tens of seconds) and reused.
export WINEPREFIX=${WINEPREFIX:-${XDG_CACHE_HOME:-$HOME/.cache}/deskbroker/wine-prefix}
export WINEDEBUG=-all WINEDLLOVERRIDES="mscoree,mshtml="
if [ ! -f "$WINEPREFIX/system.reg" ]; then
  echo "wine-conformance: creating the Wine prefix $WINEPREFIX"
  mkdir -p "$(dirname "$WINEPREFIX")"
  DISPLAY= wineboot -i >/dev/null 2>&1 || true
  wineserver -w
fi
DESK_WIN_WORKER_EXE="$out/desk-win-worker.exe" \
  cargo test --locked -p desk-win --test it "${cargo_profile[@]}" -- --nocapture --test-threads 1
