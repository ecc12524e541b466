#!/usr/bin/env bash
# Installs what deskbroker needs on a fresh Debian machine: the X server, a window manager, the
# target app (LibreCAD), accessibility and D-Bus bits, and the peer tools the benchmark compares
# against. Idempotent: installs only what is missing.
set -euo pipefail
packages=(xvfb openbox bubblewrap util-linux librecad x11-utils xdotool scrot dbus at-spi2-core python3-venv python3-gi gir1.2-gtk-3.0 chromium)
missing=()
packages+=(freecad bubblewrap)  # 3D tasks: FreeCAD and the 3D judge's own sandbox
packages+=(tesseract-ocr)  # the screenshot gate's OCR (crates/desk-gate)
for package in "${packages[@]}"; do
  dpkg -s "$package" >/dev/null 2>&1 || missing+=("$package")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing ${missing[*]}"
  sudo=""; [ "$(id -u)" -eq 0 ] || sudo="sudo"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
  $sudo apt-get clean  # the downloaded packages (FreeCAD's alone are hundreds of MB) are not kept
fi
command -v cargo >/dev/null || { echo "setup: cargo not found; install Rust (rustup) first" >&2; exit 1; }
# Opt-in (DESK_WINDOWS=1): the Windows worker's cross-compiler, Wine and the Rust target
# (docs/windows.md, scripts/wine-conformance.sh); off by default so CI time does not grow.
if [ "${DESK_WINDOWS:-0}" = 1 ]; then
  windows_missing=()
  for package in gcc-mingw-w64-x86-64 wine64 wine; do
    dpkg -s "$package" >/dev/null 2>&1 || windows_missing+=("$package")
  done
  if [ ${#windows_missing[@]} -gt 0 ]; then
    echo "setup: installing ${windows_missing[*]} (DESK_WINDOWS=1)"
    sudo=""; [ "$(id -u)" -eq 0 ] || sudo="sudo"
    $sudo apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${windows_missing[@]}" >/dev/null
    $sudo apt-get clean
  fi
  rustup target list --installed | grep -qx x86_64-pc-windows-gnu || rustup target add x86_64-pc-windows-gnu
fi
echo "setup: ready"
