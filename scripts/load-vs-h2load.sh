#!/usr/bin/env bash
# tlslab load and h2load side by side, alternating, against one nginx on
# loopback (TLS 1.3, X25519, ECDSA P-256, AES-128-GCM, 1000-byte page, one
# worker), in HTTP/1.1 and in HTTP/2 (ALPN h2; tlslab --http 2, h2load
# without --h1): new connection per request at an offered rate beyond what
# the machine can do, then keep-alive as fast as possible (the same number
# of requests for both tools, 25000 per second asked for; in HTTP/2 each
# connection carries STREAMS requests at once: tlslab --streams, h2load -m).
# Prints each run's achieved requests per second and the client's CPU per
# request (user and system; h2load's from GNU time, 10 ms resolution),
# which on a machine of few cores is taken from the server.
#
# Usage: scripts/load-vs-h2load.sh [SECONDS] [ROUNDS] [STREAMS]   (nginx and
# h2load installed: apt-get install nginx-light nghttp2-client; run from the
# repository; TLSLAB=path/to/tlslab to use another build)
set -euo pipefail
seconds="${1:-10}"
rounds="${2:-2}"
streams="${3:-8}"
cd "$(dirname "$0")/.."
tlslab=${TLSLAB:-target/release/tlslab}
[ -x "$tlslab" ] || cargo build --release --quiet
certs="${XDG_CACHE_HOME:-$HOME/.cache}/tlslab/certs/ecdsa_p256_depth3"
if [ ! -f "$certs/server.pem" ]; then
  "$tlslab" handshake --tls 1.3 --group x25519 --cert ecdsa_p256 --runs 1 --warmup 0 --no-db -q >/dev/null
fi

dir=$(mktemp -d)
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
mkdir -p "$dir/www" "$dir/logs"
chmod 755 "$dir" "$dir/www"   # the worker runs as nobody
python3 -c 'import sys; sys.stdout.buffer.write(bytes(97 + i % 26 for i in range(1000)))' >"$dir/www/page_1000"
cat >"$dir/nginx.conf" <<CONF
daemon off;
worker_processes 1;
pid nginx.pid;
error_log error.log warn;
events { worker_connections 4096; }
http {
    access_log off;
    keepalive_requests 1000000;
    client_body_temp_path logs/body; proxy_temp_path logs/proxy;
    fastcgi_temp_path logs/fastcgi; uwsgi_temp_path logs/uwsgi; scgi_temp_path logs/scgi;
    server {
        listen 127.0.0.1:$port ssl http2;
        ssl_certificate $certs/server.pem;
        ssl_certificate_key $certs/server.key;
        ssl_protocols TLSv1.3;
        ssl_conf_command Ciphersuites TLS_AES_128_GCM_SHA256;
        ssl_ecdh_curve X25519;
        ssl_session_cache off;
        ssl_session_tickets off;
        root www;
    }
}
CONF
nginx -p "$dir" -c "$dir/nginx.conf" -e "$dir/error.log" &
nginx_pid=$!
trap 'kill $nginx_pid 2>/dev/null; wait $nginx_pid 2>/dev/null; [ -n "${KEEP:-}" ] || rm -rf "$dir"' EXIT
for _ in $(seq 50); do
  (exec 3<>/dev/tcp/127.0.0.1/"$port") 2>/dev/null && break
  sleep 0.1
done

url="https://127.0.0.1:$port/page_1000"
# tlslab's report: achieved rate and client CPU per request.
tlslab_figures() {
  awk '/achieved rate, whole run/ {rate = $NF} /client CPU per request/ {cpu = $NF}
       END {print rate " req/s, client CPU " cpu " us/request"}'
}
# h2load under GNU time: achieved rate and CPU per request.
h2load_run() {
  /usr/bin/time -f '%U %S' -o "$dir/time" h2load "$@" 2>/dev/null >"$dir/h2load.out" || true
  awk -v cpu="$(cat "$dir/time")" '/^finished in/ && match($0, /[0-9.]+ req\/s/) {rate = substr($0, RSTART, RLENGTH - 6)}
       /^requests:/ {succeeded = $8}
       END {split(cpu, t, " "); printf "%s req/s, client CPU %.0f us/request\n", rate, (t[1] + t[2]) * 1e6 / (succeeded > 0 ? succeeded : 1)}' \
    "$dir/h2load.out"
}
offered=4000
for round in $(seq "$rounds"); do
  for http in 1.1 2; do
    if [ "$http" = 1.1 ]; then
      h2load_http=(--h1) tlslab_streams=() h2load_streams=()
    else
      h2load_http=() tlslab_streams=(--streams "$streams") h2load_streams=(-m "$streams")
    fi
    echo "== round $round, HTTP/$http: new connection per request, $offered req/s offered, ${seconds}s"
    n=$((offered * seconds))
    printf 'tlslab: '
    "$tlslab" load --target "127.0.0.1:$port" --http "$http" --tls 1.3 --group x25519 --cert ecdsa_p256 \
      --size 1000 --rate "$offered" --duration "$seconds" --clients 64 --max-requests "$n" -q --no-db \
      | tlslab_figures
    printf 'h2load: '
    h2load_run "${h2load_http[@]}" -n "$n" -c "$n" -r "$offered" -t 2 "$url"
    n=$((25000 * seconds))
    echo "== round $round, HTTP/$http: keep-alive, 32 connections${tlslab_streams:+, $streams streams each}, $n requests"
    printf 'tlslab: '
    "$tlslab" load --target "127.0.0.1:$port" --http "$http" --tls 1.3 --group x25519 --cert ecdsa_p256 \
      --size 1000 --rate 100000 --duration "$seconds" --mode keepalive --clients 32 "${tlslab_streams[@]}" \
      --max-requests "$n" -q --no-db \
      | tlslab_figures
    printf 'h2load: '
    h2load_run "${h2load_http[@]}" -c 32 "${h2load_streams[@]}" -t 2 -n "$n" "$url"
  done
done
