#!/usr/bin/env bash
# Builds OpenSSL from the same source and `Configure` options that tlslab's
# vendored release build used (once; kept under $CARGO_TARGET_DIR) and
# prints where it is. Run from the repository after `cargo build --release`.
#
#   scripts/build-openssl.sh            the `openssl` command (for `speed`,
#                                       `s_time`, `s_server`): prints its path
#   scripts/build-openssl.sh --shared   libssl.so.3 and libcrypto.so.3 with the
#                                       same options but shared: prints their
#                                       directory, for TLSLAB_NGINX_OPENSSL
#                                       (nginx on the same OpenSSL as tlslab)
set -euo pipefail
target="${CARGO_TARGET_DIR:-target}"
shared=no
if [ "${1:-}" = "--shared" ]; then shared=yes; fi
source_dir=$(cargo metadata --format-version 1 --locked | python3 -c '
import json, os, sys
meta = json.load(sys.stdin)
src = [p for p in meta["packages"] if p["name"] == "openssl-src"][0]
print(os.path.join(os.path.dirname(src["manifest_path"]), "openssl"))')

# The Configure line openssl-src ran for the release build, minus its paths.
configure_args() {
  local output
  output=$(ls -t "$target"/release/build/openssl-sys-*/output | head -n 1)
  grep -o '"./Configure".*' "$output" | head -n 1 | sed 's/^"\.\/Configure" //' |
    tr ' ' '\n' | tr -d '"' | grep -v -e '^--prefix=' -e '^--openssldir=' | tr '\n' ' '
}

if [ "$shared" = yes ]; then
  build="$target/openssl-shared"
  if [ ! -e "$build/libssl.so.3" ]; then
    args=$(configure_args | sed 's/\bno-shared\b/shared/')
    rm -rf "$build" && mkdir -p "$build"
    cp -a "$source_dir/." "$build/"
    (cd "$build" && perl ./Configure $args >/dev/null && make -j"$(nproc)" build_libs >/dev/null)
  fi
  (cd "$build" && pwd)
  exit 0
fi

build="$target/openssl-speed"
if [ ! -x "$build/apps/openssl" ]; then
  args=$(configure_args)
  rm -rf "$build" && mkdir -p "$build"
  cp -a "$source_dir/." "$build/"
  (cd "$build" && perl ./Configure $args >/dev/null &&
    make -j"$(nproc)" build_generated >/dev/null && make -j"$(nproc)" apps/openssl >/dev/null)
fi
echo "$build/apps/openssl"
