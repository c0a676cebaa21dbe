#!/usr/bin/env bash
# Builds the `openssl` command from the same OpenSSL source and `Configure`
# options that tlslab's vendored release build used (once; the binary is
# kept in $CARGO_TARGET_DIR/openssl-speed) and prints its path. Run from the
# repository after `cargo build --release`.
set -euo pipefail
target="${CARGO_TARGET_DIR:-target}"
source_dir=$(cargo metadata --format-version 1 --locked | python3 -c '
import json, os, sys
meta = json.load(sys.stdin)
src = [p for p in meta["packages"] if p["name"] == "openssl-src"][0]
print(os.path.join(os.path.dirname(src["manifest_path"]), "openssl"))')

build="$target/openssl-speed"
if [ ! -x "$build/apps/openssl" ]; then
  # The Configure line openssl-src ran for the release build, minus its paths.
  output=$(ls -t "$target"/release/build/openssl-sys-*/output | head -n 1)
  configure_args=$(grep -o '"./Configure".*' "$output" | head -n 1 | sed 's/^"\.\/Configure" //' |
    tr ' ' '\n' | tr -d '"' | grep -v -e '^--prefix=' -e '^--openssldir=' | tr '\n' ' ')
  rm -rf "$build" && mkdir -p "$build"
  cp -a "$source_dir/." "$build/"
  (cd "$build" && perl ./Configure $configure_args >/dev/null &&
    make -j"$(nproc)" build_generated >/dev/null && make -j"$(nproc)" apps/openssl >/dev/null)
fi
echo "$build/apps/openssl"
