#!/usr/bin/env bash
# Builds tlslab's release binary for a Raspberry Pi class board, on this
# (x86_64 Debian) machine:
#
#   scripts/cross.sh aarch64     64-bit ARM: Raspberry Pi 3, 4, 5
#                                (aarch64-unknown-linux-gnu)
#   scripts/cross.sh armv7       32-bit ARMv7: Raspberry Pi 2, the seeds' board
#                                (armv7-unknown-linux-gnueabihf)
#
# Options (before or after the target):
#   --install     install what is missing (apt-get: the target's cross gcc;
#                 rustup: the target's standard library), as CI does
#   --check       only check that everything is there (exit 0, or 2 naming
#                 what to install)
#   --features F  extra cargo features (for example `--features lzo`)
#
# The build has its own target directory (CARGO_TARGET_DIR, default
# target/cross), so the native build's cache is untouched; the cross
# compiler and linker are set for the target's triple only (CC_<triple>,
# AR_<triple>, CARGO_TARGET_<TRIPLE>_LINKER), so a native build in the same
# shell is unaffected. The vendored OpenSSL, aws-lc (aws-lc-rs) and ring
# cross-compile with the target's gcc and need nothing else beyond what the
# native build needs (perl, make). Every backend builds for both targets;
# none is left out.
#
# Exit status: 0 built, 1 the build failed, 2 usage or something missing.
set -euo pipefail
cd "$(dirname "$0")/.."

usage() {
  echo "usage: scripts/cross.sh [--install|--check] [--features F] aarch64|armv7" >&2
  exit 2
}

arch=""
install=no
check_only=no
features=()
while [ "$#" -gt 0 ]; do
  case "$1" in
    --install) install=yes ;;
    --check) check_only=yes ;;
    --features)
      [ "$#" -ge 2 ] || usage
      features=(--features "$2")
      shift
      ;;
    aarch64 | arm64) arch=aarch64 ;;
    armv7 | arm | armhf) arch=armv7 ;;
    -h | --help)
      sed -n '2,27p' "$0" | sed 's/^# \{0,1\}//'
      exit 0
      ;;
    *)
      echo "scripts/cross.sh: unknown argument '$1'" >&2
      usage
      ;;
  esac
  shift
done
[ -n "$arch" ] || usage

case "$arch" in
  aarch64)
    triple=aarch64-unknown-linux-gnu
    gnu=aarch64-linux-gnu
    package=gcc-aarch64-linux-gnu
    libc_package=libc6-dev-arm64-cross
    qemu=qemu-aarch64
    machine="ARM aarch64"
    ;;
  armv7)
    triple=armv7-unknown-linux-gnueabihf
    gnu=arm-linux-gnueabihf
    package=gcc-arm-linux-gnueabihf
    libc_package=libc6-dev-armhf-cross
    qemu=qemu-arm
    machine="ARM, EABI5"
    ;;
esac

# What is missing: apt packages and rustup targets.
missing_packages() {
  local packages=()
  command -v "$gnu-gcc" >/dev/null 2>&1 || packages+=("$package")
  # The target's C library headers (only a Recommends of the cross gcc).
  [ -f "/usr/$gnu/include/stdio.h" ] || packages+=("$libc_package")
  command -v file >/dev/null 2>&1 || packages+=(file)
  # The native build's own needs (vendored OpenSSL: perl and make; the
  # build scripts: a host C compiler).
  command -v make >/dev/null 2>&1 || packages+=(make)
  command -v perl >/dev/null 2>&1 || packages+=(perl)
  command -v cc >/dev/null 2>&1 || packages+=(build-essential)
  echo "${packages[@]}"
}
target_missing() {
  ! rustup target list --installed 2>/dev/null | grep -qx "$triple"
}

if ! command -v rustup >/dev/null 2>&1; then
  echo "scripts/cross.sh: rustup is needed to add the $triple standard library (https://rustup.rs)" >&2
  exit 2
fi
packages=$(missing_packages)
if [ -n "$packages" ] || target_missing; then
  if [ "$install" = yes ]; then
    if [ -n "$packages" ]; then
      echo "installing $packages"
      apt-get update
      # shellcheck disable=SC2086
      DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends $packages
    fi
    if target_missing; then
      rustup target add "$triple"
    fi
  else
    echo "scripts/cross.sh: missing for $triple:" >&2
    [ -z "$packages" ] || echo "  apt-get install $packages" >&2
    if target_missing; then echo "  rustup target add $triple" >&2; fi
    echo "(or run scripts/cross.sh --install $arch)" >&2
    exit 2
  fi
fi
if [ "$check_only" = yes ]; then
  echo "everything $triple needs is installed"
  exit 0
fi

# The target's tools, for this triple only.
triple_var=${triple//-/_}
upper_var=$(echo "$triple_var" | tr '[:lower:]' '[:upper:]')
export "CC_$triple_var=$gnu-gcc"
export "AR_$triple_var=$gnu-ar"
export "CARGO_TARGET_${upper_var}_LINKER=$gnu-gcc"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-target/cross}"

echo "building tlslab for $triple (every backend: openssl vendored, rustls on aws-lc-rs and ring, dimpl) in $CARGO_TARGET_DIR"
start=$(date +%s)
if ! cargo build --release --locked --target "$triple" "${features[@]}"; then
  echo "scripts/cross.sh: the build for $triple failed" >&2
  exit 1
fi
seconds=$(($(date +%s) - start))

binary="$CARGO_TARGET_DIR/$triple/release/tlslab"
size=$(stat -c %s "$binary")
echo "built in ${seconds} s: $binary ($((size / 1024 / 1024)) MiB, $size bytes; debug line tables included: $gnu-strip makes it smaller)"
description=$(file -b "$binary")
echo "file: $description"
case "$description" in
  *"$machine"*) ;;
  *)
    echo "scripts/cross.sh: $binary is not an $machine binary" >&2
    exit 1
    ;;
esac
echo "run it here under emulation: $qemu -L /usr/$gnu $binary list"
