#!/usr/bin/env bash
# Loopback TCP, full handshakes per second: tlslab (`handshake --transport
# tcp`, its OpenSSL client and server in two threads of one process) against
# `openssl s_time -new` connecting to `openssl s_server`, the `openssl`
# command built from the same OpenSSL source and Configure options as
# tlslab's vendored build (scripts/build-openssl.sh). Same protocol, group
# (X25519 only, on both sides, through an OpenSSL config file), certificate
# chain (tlslab's ECDSA P-256 chain: root -> intermediate -> leaf, the
# client verifying it), suite (AES-128-GCM), no session tickets or cache.
# The two are measured side by side, alternating, ROUNDS times per version.
#
# s_time's rate: connections / elapsed seconds, its client and s_server each a
# single-threaded process. tlslab's: its handshakes/s (1 / mean wall time
# per handshake, from the first side's start to the later side's end,
# TCP connect and accept included), and in brackets the client side's own
# rate (1 / mean wall time of the client's side alone, from its connect to
# its handshake being done), which is what s_time's client times: in TLS
# 1.3 the client is done once it has sent its Finished, while the server
# still reads it.
#
# Usage: scripts/s_time-compare.sh [SECONDS] [ROUNDS]   (run from the repository)
set -euo pipefail
seconds="${1:-5}"
rounds="${2:-3}"
cd "$(dirname "$0")/.."
target="${CARGO_TARGET_DIR:-target}"

cargo build --release --quiet
openssl=$(scripts/build-openssl.sh)
tlslab="$target/release/tlslab"
"$openssl" version

work=$(mktemp -d)
server_pid=""
cleanup() {
  if [ -n "$server_pid" ]; then kill "$server_pid" 2>/dev/null || true; fi
  rm -rf "$work"
}
trap cleanup EXIT

# tlslab's certificate chain, generated into its cache on first use.
"$tlslab" handshake --no-db -q --backend openssl --tls 1.3 --group x25519 --cert ecdsa_p256 \
  --runs 1 --warmup 0 --cert-dir "$work/certs" >/dev/null
chain="$work/certs/ecdsa_p256_depth3"
awk -v dir="$work" '/BEGIN CERTIFICATE/ { n++ } { print > (dir "/cert" n ".pem") }' "$chain/server.pem"

# Both OpenSSL processes get the groups tlslab's OpenSSL sides list (s_time
# has no -groups): X25519, and in TLS 1.2 the certificate's curve after it
# (RFC 4492: an ECDSA certificate needs its curve among the client's groups;
# X25519 is still the one chosen).
groups_config() { # groups list
  cat >"$work/openssl.cnf" <<CONF
openssl_conf = openssl_init
[openssl_init]
ssl_conf = ssl_section
[ssl_section]
system_default = groups_only
[groups_only]
Groups = $1
CONF
}
export OPENSSL_CONF="$work/openssl.cnf"

port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')

s_time_rate() { # version flag, suite options
  # s_time counts whole seconds of real time: the elapsed time is taken here.
  local start end
  start=$(date +%s.%N)
  "$openssl" s_time -connect "127.0.0.1:$port" -new -time "$seconds" "$1" "${@:2}" \
    -CAfile "$chain/root.pem" -verify 3 >"$work/s_time.out" 2>/dev/null
  end=$(date +%s.%N)
  awk -v elapsed="$(echo "$end - $start" | bc -l)" \
    '/connections in .* real seconds/ { printf "%.0f\n", $1 / elapsed; found = 1 }
     END { if (!found) print "failed" }' "$work/s_time.out"
}

tlslab_rate() { # tlslab version id
  "$tlslab" handshake --no-db -q --backend openssl --tls "$1" --group x25519 --cert ecdsa_p256 \
    --suite aes128gcm --transport tcp --precision 0.01% --max-time "$seconds" --warmup 0.2 \
    --cert-dir "$work/certs" --export-csv "$work/tlslab.csv" >/dev/null
  python3 -c '
import csv, sys
row = next(csv.DictReader(open(sys.argv[1])))
print(round(float(row["handshakes_per_second"])), round(1e6 / float(row["client_call_mean_us"])))' "$work/tlslab.csv"
}

for version in 1.2 1.3; do
  if [ "$version" = 1.2 ]; then
    flag=-tls1_2
    suite=(-cipher ECDHE-ECDSA-AES128-GCM-SHA256)
    groups_config X25519:P-256
  else
    flag=-tls1_3
    suite=(-ciphersuites TLS_AES_128_GCM_SHA256)
    groups_config X25519
  fi
  "$openssl" s_server -accept "127.0.0.1:$port" -www -quiet -naccept 1000000 "$flag" "${suite[@]}" \
    -cert "$work/cert1.pem" -cert_chain "$work/cert2.pem" -key "$chain/server.key" \
    -no_cache -no_ticket -num_tickets 0 </dev/null >/dev/null 2>&1 &
  server_pid=$!
  for _ in $(seq 50); do
    if (echo >/dev/tcp/127.0.0.1/"$port") 2>/dev/null; then break; fi
    sleep 0.1
  done
  echo "== TLS $version, X25519, ECDSA P-256 chain, AES-128-GCM: handshakes/s, ${seconds} s each, alternating"
  for round in $(seq "$rounds"); do
    s_time_hs=$(s_time_rate "$flag" "${suite[@]}")
    read -r tlslab_hs tlslab_client_hs < <(tlslab_rate "$version")
    echo "round $round: openssl s_time -new ${s_time_hs}  tlslab --transport tcp ${tlslab_hs}  (client side only ${tlslab_client_hs})"
  done
  kill "$server_pid" && wait "$server_pid" 2>/dev/null || true
  server_pid=""
done
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg) on $(nproc) cores"
