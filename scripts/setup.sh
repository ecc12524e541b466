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
echo "setup: ready"
