#!/usr/bin/env bash
# Builds the `openssl` command from the same OpenSSL source and configuration
# that tlslab's vendored build uses, then runs `openssl speed` and
# `tlslab speed` for the same algorithms one after the other, so the two can
# be compared on one machine in one session.
#
# Usage: scripts/openssl-speed-compare.sh [SECONDS]   (run from the repository)
set -euo pipefail
seconds="${1:-3}"
cd "$(dirname "$0")/.."

cargo build --release --quiet
source_dir=$(cargo metadata --format-version 1 --locked | python3 -c '
import json, os, sys
meta = json.load(sys.stdin)
src = [p for p in meta["packages"] if p["name"] == "openssl-src"][0]
print(os.path.join(os.path.dirname(src["manifest_path"]), "openssl"))')

# The Configure line openssl-src ran for the release build, minus its paths.
output=$(ls -t target/release/build/openssl-sys-*/output | head -n 1)
configure_args=$(grep -o '"./Configure".*' "$output" | head -n 1 | sed 's/^"\.\/Configure" //' |
  tr ' ' '\n' | tr -d '"' | grep -v -e '^--prefix=' -e '^--openssldir=' | tr '\n' ' ')

build=target/openssl-speed
if [ ! -x "$build/apps/openssl" ]; then
  rm -rf "$build" && mkdir -p "$build"
  cp -a "$source_dir/." "$build/"
  (cd "$build" && perl ./Configure $configure_args >/dev/null && make -j"$(nproc)" build_generated >/dev/null && make -j"$(nproc)" apps/openssl >/dev/null)
fi
"$build/apps/openssl" version

echo "== openssl speed (-seconds $seconds)"
"$build/apps/openssl" speed -seconds "$seconds" rsa2048 ecdsap256 ecdhp256 2>/dev/null | tail -n 8
"$build/apps/openssl" speed -seconds "$seconds" -evp aes-128-gcm -bytes 16384 2>/dev/null | tail -n 2
"$build/apps/openssl" speed -seconds "$seconds" -evp sha256 -bytes 16384 2>/dev/null | tail -n 2

echo "== tlslab speed"
./target/release/tlslab speed --no-db -q --backend openssl --precision 1% --max-time "$seconds" \
  --algorithm rsa2048,ecdsa_p256,ecdh_p256,aes128gcm,sha256 --size 16384
