#!/usr/bin/env python3
"""How well several runs agree: the spread of each row's ratio across runs.

Usage: scripts/ratio-spread.py RUN1.json RUN2.json [RUN3.json ...]

Reads JSON exports (`--export-json`) of `tlslab handshake` (each row's
ratio to the baseline) or `tlslab tunnel` (the cipher and digest tables'
"x fastest"), and prints per row the ratio in every run and its spread,
(largest - smallest) / median, then the median and the worst row. The
baseline and fastest rows (1 by definition) are left out.
"""
import json
import statistics
import sys


def ratios(path):
    with open(path) as f:
        run = json.load(f)
    found = {}
    if "ciphers" in run:
        for table in ("ciphers", "digests"):
            for row in run[table]:
                found[f"{table}: {row['engine']} {row['name']}"] = row["relative"]
    else:
        for row in run["rows"]:
            if row.get("ratio_to_baseline"):
                found[f"{row['backend']} {row['label']}"] = row["ratio_to_baseline"]["value"]
    return found


def main(paths):
    if len(paths) < 2:
        sys.exit(__doc__)
    runs = [ratios(p) for p in paths]
    shared = [k for k in runs[0] if all(k in r for r in runs[1:])]
    spreads = []
    for key in shared:
        values = [r[key] for r in runs]
        if all(v == 1.0 for v in values):
            continue
        spread = (max(values) - min(values)) / statistics.median(values)
        spreads.append((spread, key))
        print(f"{key:58} " + " ".join(f"{v:7.3f}" for v in values) + f" {spread * 100:5.1f}%")
    print(f"rows: {len(spreads)}")
    print(f"median row: {statistics.median(s for s, _ in spreads) * 100:.1f}%")
    worst = max(spreads)
    print(f"worst row: {worst[0] * 100:.1f}% ({worst[1]})")


if __name__ == "__main__":
    main(sys.argv[1:])
