#!/usr/bin/env bash
# Redraws every picture in docs/ from fresh runs of the release binary, on
# small but honest budgets (each command's own stop rules, a time budget
# per run), so no picture goes stale. docs/charts.md shows each picture
# with the command below that drew it; keep the two in step.
#
#   scripts/docs-pictures.sh            # every picture (about 3 minutes on 2 cores)
#   scripts/docs-pictures.sh tunnel     # only the pictures whose name holds "tunnel"
#
# Needs: the release binary (built if missing). The HTML report's
# screenshot needs Chromium (apt-get install --no-install-recommends
# chromium); without it that picture is kept and the script says so.
set -euo pipefail
cd "$(dirname "$0")/.."

only=${1:-}
tlslab=${TLSLAB:-target/release/tlslab}
if [ ! -x "$tlslab" ]; then
  cargo build --release
fi
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT

# draw PICTURE COMMAND...: runs the command with --no-db and --plot into a
# scratch directory, then copies the chart named PICTURE to docs/PICTURE.png.
draw() {
  local picture=$1
  shift
  if [ -n "$only" ] && [[ $picture != *"$only"* ]]; then
    return
  fi
  local dir="$scratch/$picture"
  mkdir -p "$dir"
  echo "== docs/$picture.png: tlslab $*"
  local start=$SECONDS
  "$tlslab" "$@" --no-db --quiet --plot "$dir" >"$dir/table.txt"
  cp "$dir/$picture.png" "docs/$picture.png"
  echo "   drawn in $((SECONDS - start)) s"
}

draw handshake_cpu handshake --backend openssl --tls 1.2 \
  --group rsa,dhe2048,p256,x25519 --cert rsa2048,ecdsa_p256 --max-total-time 20
draw speed_throughput speed --backend openssl,rustls-ring \
  --algorithm aes128gcm,chacha20poly1305,sha256 --size 64,1024,16384 --max-total-time 20
draw cost_breakdown cost --breakdown --max-total-time 20
draw tunnel_ciphers tunnel --preset openvpn-classic
draw bulk_send bulk --backend openssl,rustls-ring --tls 1.2 --max-total-time 20
draw load_latency load --server embedded --backend openssl --rate 50 --ramp 1 --duration 5 --size 50k
draw load_latency_rate load --server embedded --backend openssl --rate 300 --ramp 5 \
  --duration 6 --size 50k --clients 8
draw capacity handshake --capacity --backend openssl,rustls-aws-lc --tls 1.3 \
  --group x25519 --cert rsa2048,ecdsa_p256 --max-time 1

# The HTML report of two mock runs, as headless Chromium shows it.
if [ -z "$only" ] || [[ report-screenshot == *"$only"* ]]; then
  chromium=${TLSLAB_CHROMIUM:-$(command -v chromium || command -v chromium-browser || true)}
  if [ -z "$chromium" ]; then
    echo "skipped: docs/report-screenshot.png kept: Chromium is not installed" \
      "(install: apt-get install --no-install-recommends chromium)"
  else
    echo "== docs/report-screenshot.png: tlslab report --html of two mock runs, in headless Chromium"
    db="$scratch/report.sqlite"
    for group in x25519,p256 x25519,p256,p384; do
      "$tlslab" handshake --backend mock --tls 1.3 --group "$group" \
        --cert rsa2048,ecdsa_p256 --runs 20 --warmup 0 --db "$db" --quiet >/dev/null
    done
    "$tlslab" report --db "$db" --run 1,2 --html "$scratch/report.html"
    "$chromium" --headless --no-sandbox --disable-gpu --hide-scrollbars \
      --window-size=1280,2000 --screenshot="$scratch/report.png" \
      "file://$scratch/report.html" >/dev/null 2>&1
    cp "$scratch/report.png" docs/report-screenshot.png
  fi
fi
