#!/usr/bin/env bash
# The key-exchange study against a real server beside the same study in
# process: `tlslab handshake --preset kex-matrix --server nginx`, with nginx
# on shared libraries built from tlslab's own OpenSSL source
# (scripts/build-openssl.sh --shared, loaded through TLSLAB_NGINX_OPENSSL),
# then `--preset kex-matrix` in process; RUNS times each, alternating. Prints
# each row's ratio to the RSA row per run and how many pairs of rows the two
# order differently.
#
# Usage: scripts/nginx-vs-inprocess.sh [RUNS]   (run from the repository)
set -euo pipefail
runs="${1:-2}"
cd "$(dirname "$0")/.."
target="${CARGO_TARGET_DIR:-target}"
cargo build --release --quiet
libraries=$(scripts/build-openssl.sh --shared)
tlslab="$target/release/tlslab"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

for run in $(seq "$runs"); do
  TLSLAB_NGINX_OPENSSL="$libraries" "$tlslab" handshake --preset kex-matrix --server nginx \
    --no-db -q --export-json "$work/nginx$run.json" >/dev/null
  "$tlslab" handshake --preset kex-matrix --no-db -q --export-json "$work/inprocess$run.json" >/dev/null
done
echo "load average: $(cut -d ' ' -f 1-3 /proc/loadavg) on $(nproc) cores"

python3 - "$work" "$runs" <<'PY'
import itertools, json, sys
work, runs = sys.argv[1], int(sys.argv[2])

def rows(path):
    found = {}
    for row in json.load(open(path))["rows"]:
        if row["status"] == "measured":
            ratio = row["ratio_to_baseline"]
            name = row["description"].replace("TLS 1.2 ", "").replace(" aes128gcm", "")
            found[row["label"]] = (ratio["value"] if ratio else 1.0, row["server_cpu_us"]["median"], name)
    return found

nginx = [rows(f"{work}/nginx{r}.json") for r in range(1, runs + 1)]
inprocess = [rows(f"{work}/inprocess{r}.json") for r in range(1, runs + 1)]
labels = [l for l in inprocess[0] if all(l in run for run in nginx + inprocess)]
print("| key exchange + certificate | in process × RSA, per run | nginx × RSA, per run "
      "| server CPU µs, in process / nginx (run 1) |")
print("|---|---:|---:|---:|")
for label in sorted(labels, key=lambda l: inprocess[0][l][0]):
    ours = " / ".join(f"{run[label][0]:.2f}" for run in inprocess)
    theirs = " / ".join(f"{run[label][0]:.2f}" for run in nginx)
    cpu = f"{inprocess[0][label][1]:.0f} / {nginx[0][label][1]:.0f}"
    print(f"| {inprocess[0][label][2]} | {ours} | {theirs} | {cpu} |")
pairs = list(itertools.combinations(labels, 2))
for r in range(runs):
    a, b = inprocess[r], nginx[r]
    crossed = [(x, y) for x, y in pairs if (a[x][0] - a[y][0]) * (b[x][0] - b[y][0]) < 0]
    print(f"run {r + 1}: {len(crossed)} of {len(pairs)} pairs of rows ordered differently"
          + "".join(f"\n  {a[x][2]} / {a[y][2]}" for x, y in crossed))
PY
