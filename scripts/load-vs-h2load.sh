#!/usr/bin/env bash
# tlslab load and h2load side by side against the servers tlslab loads
# (nginx, Apache httpd, HAProxy, Caddy), each started by `tlslab serve
# --server NAME` exactly as `tlslab load --server NAME` starts it (its
# generated configuration, the test chain, a generated 1000-byte page; TLS
# 1.3, X25519, ECDSA P-256, AES-128-GCM), on loopback.
#
# For each server, HTTP version (1.1; 2 by ALPN h2) and mode, tlslab and
# h2load run in turn within a round (the order swapped each round), rounds
# repeated; both are one client thread (tlslab --event-loops 1, h2load -t 1)
# running as fast as the server answers for SECONDS:
#   new        a new connection and full handshake per request: tlslab's
#              CLIENTS connections at once; h2load one request per
#              connection (-c = -n; its `Connection: close` loop does not
#              end with -D here, and HTTP/2 has no such header), the
#              connections started every 10 ms at 1.25 times the rate
#              tlslab reached on the same server in the round before
#              (or this one, in round 1): enough to find the server's
#              capacity, not so much that its listen queue overflows;
#   keepalive  CLIENTS connections kept open (HTTP/2: STREAMS requests in
#              flight on each, tlslab --streams, h2load -m); h2load as fast
#              as the server answers, tlslab offered twice the rate h2load
#              reached last on the server (1,000,000 req/s before that).
# Each run's achieved requests per second and client CPU per request are
# measured the same way for both (GNU time: user + system of the whole
# process, 10 ms resolution, divided by the requests answered); the table
# gives the median of each over the rounds and the median of the
# within-round ratios tlslab/h2load. tlslab checks every body byte for
# byte and verifies the server's certificate chain; h2load does neither.
# On a machine of few cores the client's CPU is taken from the server.
#
# Usage: scripts/load-vs-h2load.sh [--servers LIST] [SECONDS] [ROUNDS] [STREAMS] [CLIENTS]
#   LIST: comma-separated, default nginx,apache,haproxy,caddy (those not
#   installed are skipped with a line); defaults 5 s, 2 rounds, 8 streams,
#   32 clients. Needs h2load and GNU time (apt-get install nghttp2-client
#   time) and the servers (nginx-light apache2 haproxy caddy); run from the
#   repository; TLSLAB=path/to/tlslab to use another build (default the
#   release build, built if missing). KEEP=1 keeps the scratch directory.
set -euo pipefail
servers=nginx,apache,haproxy,caddy
if [ "${1:-}" = --servers ]; then
  servers="$2"
  shift 2
fi
seconds="${1:-5}"
rounds="${2:-2}"
streams="${3:-8}"
clients="${4:-32}"
cd "$(dirname "$0")/.."
tlslab=${TLSLAB:-target/release/tlslab}
[ -x "$tlslab" ] || cargo build --release --quiet
for program in h2load /usr/bin/time python3; do
  command -v "$program" >/dev/null || { echo "$program is missing (apt-get install nghttp2-client time python3)" >&2; exit 2; }
done

dir=$(mktemp -d)
serve_pid=
stop_server() {
  if [ -n "$serve_pid" ]; then
    kill -TERM "$serve_pid" 2>/dev/null || true
    wait "$serve_pid" 2>/dev/null || true
    serve_pid=
  fi
}
trap 'stop_server; [ -n "${KEEP:-}" ] || rm -rf "$dir"' EXIT
results="$dir/results.tsv"
: >"$results"

# tlslab load under GNU time: "RATE CPU_US_PER_REQUEST ANSWERED".
tlslab_run() {
  local out="$dir/tlslab.out"
  /usr/bin/time -f '%U %S' -o "$dir/time" "$tlslab" load --target "$address" --no-probe \
    --tls 1.3 --group x25519 --cert ecdsa_p256 --size 1000 --duration "$seconds" \
    --max-requests 100000000 --clients "$clients" --event-loops 1 --no-db -q "$@" >"$out" 2>&1 || true
  awk -v cpu="$(cat "$dir/time")" '
    /achieved rate, whole run/ {rate = $NF}
    /^answered \/ errors/ {answered = $(NF - 2)}
    END {split(cpu, t, " "); if (answered == "") answered = 0
         printf "%s %.1f %s\n", (rate == "" ? 0 : rate), (t[1] + t[2]) * 1e6 / (answered > 0 ? answered : 1), answered}' "$out"
}
# h2load under GNU time: "RATE CPU_US_PER_REQUEST ANSWERED".
h2load_run() {
  local out="$dir/h2load.out"
  /usr/bin/time -f '%U %S' -o "$dir/time" h2load -t 1 "$@" "https://$address/page_1000" >"$out" 2>&1 || true
  awk -v cpu="$(cat "$dir/time")" '
    /^finished in/ && match($0, /[0-9.]+ req\/s/) {rate = substr($0, RSTART, RLENGTH - 6)}
    /^requests:/ {answered = $8}
    END {split(cpu, t, " "); if (answered == "") answered = 0
         printf "%s %.1f %s\n", (rate == "" ? 0 : rate), (t[1] + t[2]) * 1e6 / (answered > 0 ? answered : 1), answered}' "$out"
}
# One measurement of TOOL for the current server, HTTP version and mode.
measure() {
  local tool=$1 figures
  case "$tool/$http/$mode" in
    tlslab/1.1/new) figures=$(tlslab_run --http 1.1 --mode new --rate 100000) ;;
    tlslab/2/new) figures=$(tlslab_run --http 2 --mode new --rate 100000) ;;
    tlslab/1.1/keepalive) figures=$(tlslab_run --http 1.1 --mode keepalive --rate "$(keepalive_offer)") ;;
    tlslab/2/keepalive) figures=$(tlslab_run --http 2 --mode keepalive --streams "$streams" --rate "$(keepalive_offer)") ;;
    h2load/1.1/new) figures=$(h2load_run --h1 "${h2load_new[@]}") ;;
    h2load/2/new) figures=$(h2load_run "${h2load_new[@]}") ;;
    h2load/1.1/keepalive) figures=$(h2load_run --h1 -c "$clients" -D "$seconds") ;;
    h2load/2/keepalive) figures=$(h2load_run -c "$clients" -m "$streams" -D "$seconds") ;;
  esac
  printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$server" "$http" "$mode" "$round" "$tool" "$figures" >>"$results"
  if [ "$tool/$mode" = tlslab/new ]; then
    reached[$http]=${figures%% *}
  fi
  if [ "$tool/$mode" = h2load/keepalive ]; then
    capacity[$http]=${figures%% *}
  fi
  printf '  %-6s %s req/s, %s us/request, %s answered\n' "$tool" $figures
}

# tlslab's offered rate kept alive (its load is an open model: requests due
# at evenly spaced times): twice the rate h2load reached last on this server
# and HTTP version (h2load runs closed, as fast as the server answers), or
# 1,000,000 req/s before h2load has run there. Beyond what the server can
# answer, but not so far that planning the due times costs the client much.
declare -A capacity
keepalive_offer() {
  awk -v r="${capacity[$http]:-500000}" 'BEGIN {printf "%d", r * 2 + 1}'
}

# h2load's new-connection options: 1.25 times the rate tlslab reached last
# on this server and HTTP version, in connections every 10 ms, for SECONDS.
declare -A reached
set_h2load_new() {
  local offered per_period
  offered=$(awk -v r="${reached[$http]:-1000}" 'BEGIN {printf "%d", r * 1.25 + 1}')
  per_period=$(( (offered + 99) / 100 ))
  h2load_new=(-c $((per_period * 100 * seconds)) -n $((per_period * 100 * seconds)) -r "$per_period" --rate-period 10ms)
}

IFS=, read -ra server_list <<<"$servers"
for server in "${server_list[@]}"; do
  "$tlslab" serve --server "$server" --size 1000 -q >"$dir/address" 2>"$dir/serve.err" &
  serve_pid=$!
  address=
  for _ in $(seq 300); do
    address=$(head -n1 "$dir/address")
    [ -n "$address" ] && break
    kill -0 "$serve_pid" 2>/dev/null || break
    sleep 0.1
  done
  if [ -z "$address" ]; then
    echo "== $server: skipped: $(tail -n3 "$dir/serve.err" | tr '\n' ' ')"
    stop_server
    continue
  fi
  echo "== $server at $address"
  reached=()
  capacity=()
  for round in $(seq "$rounds"); do
    for http in 1.1 2; do
      for mode in new keepalive; do
        echo "round $round, HTTP/$http, $mode"
        if [ $((round % 2)) = 1 ]; then
          measure tlslab
          set_h2load_new
          measure h2load
        else
          set_h2load_new
          measure h2load
          measure tlslab
        fi
      done
    done
  done
  stop_server
done

python3 - "$results" <<'PY'
import statistics, sys
rows = {}
for line in open(sys.argv[1]):
    server, http, mode, round_, tool, rate, cpu, answered = line.split()
    rows.setdefault((server, http, mode), {}).setdefault(round_, {})[tool] = (float(rate), float(cpu))
print()
print("| server | HTTP | mode | tlslab req/s | h2load req/s | rate tlslab/h2load | tlslab CPU µs/req | h2load CPU µs/req | CPU tlslab/h2load |")
print("|---|---|---|---|---|---|---|---|---|")
for (server, http, mode), rounds in rows.items():
    pairs = [r for r in rounds.values() if "tlslab" in r and "h2load" in r]
    if not pairs:
        continue
    med = lambda f: statistics.median(f(p) for p in pairs)
    ratio = lambda i: med(lambda p: p["tlslab"][i] / p["h2load"][i] if p["h2load"][i] else float("nan"))
    print(f"| {server} | {http} | {mode} | {med(lambda p: p['tlslab'][0]):.0f} | {med(lambda p: p['h2load'][0]):.0f} "
          f"| {ratio(0):.2f} | {med(lambda p: p['tlslab'][1]):.0f} | {med(lambda p: p['h2load'][1]):.0f} | {ratio(1):.2f} |")
print(f"\nmedians over {len(next(iter(rows.values())))} round(s); ratios are medians of within-round ratios")
PY
