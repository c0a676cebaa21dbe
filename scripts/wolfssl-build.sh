#!/usr/bin/env bash
# Builds tlslab with the opt-in wolfSSL backend (cargo feature `wolfssl`,
# GPL-2.0-or-later) with wolfSSL's optimised public-key math or without it:
#
#   scripts/wolfssl-build.sh [--math sp|generic] [CARGO BUILD ARGS...]
#
#   --math sp        (default) wolfssl-sys's own build: its single-precision
#                    ("SP") code for RSA/DH up to 4096 bits and the NIST
#                    curves, in assembly; into target/wolfssl
#   --math generic   the same wolfSSL without it (generic multi-precision
#                    math, sp_int.c); into target/wolfssl-generic
#
# Both have session tickets. Everything after the options goes to `cargo
# build --features wolfssl` (for example --release); CARGO_TARGET_DIR, when
# set, replaces the default directory. The binary is then
# DIR/release/tlslab (or DIR/debug/tlslab). Run each build on the same
# preset with its own --db and `tlslab compare` the two runs
# (docs/studies/dtls.md); each run's library version says which math it had.
#
# How: wolfssl-sys runs wolfSSL's autoconf configure with a fixed option
# list; configure also reads the site file named by CONFIG_SITE after its
# command line, so scripts/wolfssl/<math>-math.site adds session tickets
# and (generic) undoes --enable-sp. .cargo/config.toml names the SP one for
# a plain `cargo build --features wolfssl`. wolfssl-sys does not rebuild
# when that file changes, so this script keeps the file's checksum in the
# target directory and cleans wolfssl-sys there when it differs.
#
# Exit status: 0 built, 1 the build failed, 2 usage.
set -euo pipefail
cd "$(dirname "$0")/.."

usage() {
  echo "usage: scripts/wolfssl-build.sh [--math sp|generic] [cargo build args...]" >&2
  exit 2
}

math=sp
while [ "$#" -gt 0 ]; do
  case "$1" in
    --math)
      [ "$#" -ge 2 ] || usage
      math=$2
      shift 2
      ;;
    --math=*)
      math=${1#--math=}
      shift
      ;;
    -h | --help)
      sed -n '2,26p' "$0" | sed 's/^# \{0,1\}//'
      exit 0
      ;;
    *) break ;;
  esac
done
case "$math" in
  sp) default_dir=target/wolfssl ;;
  generic) default_dir=target/wolfssl-generic ;;
  *)
    echo "scripts/wolfssl-build.sh: unknown math '$math' (sp or generic)" >&2
    usage
    ;;
esac

site="$PWD/scripts/wolfssl/$math-math.site"
export CONFIG_SITE="$site"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$default_dir}"
mkdir -p "$CARGO_TARGET_DIR"
stamp="$CARGO_TARGET_DIR/wolfssl-site.sha256"
wanted=$(sha256sum "$site" | cut -d' ' -f1)
if [ "$(cat "$stamp" 2>/dev/null)" != "$wanted" ]; then
  echo "wolfssl-build: $site is new to $CARGO_TARGET_DIR: rebuilding wolfssl-sys"
  cargo clean -p wolfssl-sys
fi
cargo build --features wolfssl "$@"
echo "$wanted" >"$stamp"
echo "wolfssl-build: wolfSSL with $math math in $CARGO_TARGET_DIR"
