#!/usr/bin/env bash
# Other work on the machine that starts and stops: one busy loop per core,
# 3 s on, 2 s off, for SECONDS seconds (default 60). Used to check that
# tlslab's ratios hold on a busy machine (see README, "Measured performance").
#
# Usage: scripts/busy-on-off.sh [SECONDS] &   ... run tlslab ...   ; kill %1
set -u
end=$((SECONDS + ${1:-60}))
cores=$(nproc)
while [ "$SECONDS" -lt "$end" ]; do
  for _ in $(seq "$cores"); do
    timeout 3 sh -c 'while :; do :; done' &
  done
  wait
  sleep 2
done
