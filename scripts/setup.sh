#!/usr/bin/env bash
# Installs what deskbroker needs on a fresh Debian machine: the X server, a window manager, the
# target app (LibreCAD), accessibility and D-Bus bits, and the peer tools the benchmark compares
# against. Idempotent: installs only what is missing.
set -euo pipefail
# Installs those of the named packages that are missing (apt-get; sudo when not root). With
# --no-install-recommends first, only what they depend on.
install_missing() {
  local options=()
  [ "$1" = --no-install-recommends ] && { options+=("$1"); shift; }
  local missing=() package
  for package in "$@"; do
    dpkg -s "$package" >/dev/null 2>&1 || missing+=("$package")
  done
  [ ${#missing[@]} -gt 0 ] || return 0
  echo "setup: installing ${missing[*]}"
  local sudo=""; [ "$(id -u)" -eq 0 ] || sudo="sudo"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${options[@]}" "${missing[@]}" >/dev/null
  $sudo apt-get clean  # the downloaded packages (FreeCAD's alone are hundreds of MB) are not kept
}
packages=(xvfb openbox bubblewrap util-linux librecad x11-utils xdotool scrot dbus at-spi2-core python3-venv python3-gi gir1.2-gtk-3.0 chromium)
packages+=(freecad)  # 3D tasks: FreeCAD (the 3D judge's own sandbox is bubblewrap, above)
packages+=(tesseract-ocr)  # the screenshot gate's OCR (crates/desk-gate)
packages+=(libtesseract-dev libleptonica-dev libclang-dev)  # desk-ocr, the long-lived OCR engine (tesseract crate, bindgen)
packages+=(gcc-mingw-w64-x86-64)  # the Windows worker's linker: CI cross-compiles desk-win
install_missing --no-install-recommends "${packages[@]}"
command -v cargo >/dev/null || { echo "setup: cargo not found; install Rust (rustup) first" >&2; exit 1; }
# The Windows worker's Rust target (scripts/test.sh builds and lints desk-win for it; about 2 s).
rustup target list --installed | grep -qx x86_64-pc-windows-gnu || rustup target add x86_64-pc-windows-gnu
# Wine for the Windows worker's conformance run under Wine in CI (scripts/wine-conformance.sh,
# docs/windows.md: about 37 s to install). Wine needs its recommended packages.
install_missing wine64 wine
echo "setup: ready"
