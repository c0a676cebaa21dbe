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
openssl=$(scripts/build-openssl.sh)
"$openssl" version

echo "== openssl speed (-seconds $seconds)"
"$openssl" speed -seconds "$seconds" rsa2048 ecdsap256 ecdhp256 2>/dev/null | tail -n 8
"$openssl" speed -seconds "$seconds" -evp aes-128-gcm -bytes 16384 2>/dev/null | tail -n 2
"$openssl" speed -seconds "$seconds" -evp sha256 -bytes 16384 2>/dev/null | tail -n 2

echo "== tlslab speed"
"${CARGO_TARGET_DIR:-target}"/release/tlslab speed --no-db -q --backend openssl --precision 1% --max-time "$seconds" \
  --algorithm rsa2048,ecdsa_p256,ecdh_p256,aes128gcm,sha256 --size 16384
