#!/usr/bin/env bash
# tlslab on Slurm: one load offered by N tasks together (typically N
# machines against one server), one shard each. The batch step computes
# the common start once (now + TLSLAB_START_MARGIN seconds, unless the
# submitter exported TLSLAB_START_AT), then srun starts the N tasks: task k
# (SLURM_PROCID, from 0) offers shard k+1 of N (1/N of the rate, clients
# and requests) from that start and writes shard-k.sqlite.
#
#   TLSLAB_TARGET=10.0.0.5:443 \
#   TLSLAB_ARGS="--rate 4000 --duration 30 --i-have-permission --max-rate 4000" \
#   sbatch --ntasks=4 --ntasks-per-node=1 deploy/slurm-load.sh
#   (when the job is done, in the results directory:)
#   tlslab merge all.sqlite shard-*.sqlite && tlslab report --db all.sqlite
#
# Environment: TLSLAB (the binary, default tlslab on PATH), TLSLAB_TARGET
# (the server, HOST:PORT or a URL; without it each task loads the server
# `load` starts on its own machine), TLSLAB_ARGS (the load's options, as for
# one machine: the whole --rate, --clients and --max-requests), TLSLAB_OUT
# (the results directory, default ./tlslab-load, on a file system every node
# shares), TLSLAB_START_MARGIN (seconds from the batch step to the start,
# default 15: time enough for srun to start every task and each to probe the
# server; a shard that finds the start passed exits 2 having sent nothing),
# TLSLAB_START_AT (the common start, RFC 3339 or Unix seconds, instead).
#SBATCH --job-name=tlslab-load
#SBATCH --cpus-per-task=2
set -euo pipefail

: "${SLURM_NTASKS:?submit with sbatch --ntasks=N}"
out=${TLSLAB_OUT:-$PWD/tlslab-load}
mkdir -p "$out"
# Computed once, here, so every task reads the same instant.
export TLSLAB_START_AT=${TLSLAB_START_AT:-$(($(date +%s) + ${TLSLAB_START_MARGIN:-15}))}
export TLSLAB_OUT_DIR=$out
echo "slurm-load.sh: $SLURM_NTASKS shards start at $TLSLAB_START_AT (Unix seconds or as given)" >&2

# One task per shard; a task's own file is removed first (a requeued job
# starts afresh). TLSLAB_ARGS is split into words on purpose.
exec srun --ntasks="$SLURM_NTASKS" bash -c '
  set -euo pipefail
  db="$TLSLAB_OUT_DIR/shard-$SLURM_PROCID.sqlite"
  rm -f "$db"
  # shellcheck disable=SC2086
  exec "${TLSLAB:-tlslab}" load ${TLSLAB_TARGET:+--target "$TLSLAB_TARGET"} ${TLSLAB_ARGS:-} \
    --shard "$((SLURM_PROCID + 1))/$SLURM_NTASKS" --db "$db" --quiet
'
