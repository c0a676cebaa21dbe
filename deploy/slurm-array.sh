#!/usr/bin/env bash
# tlslab on Slurm: one matrix split over an array job, one shard per task.
# Task k of an array of N (a contiguous range, no step) measures shard (k - first + 1)/N
# and writes shard-k.sqlite; a requeued task redoes exactly its cells.
#
#   sbatch --array=0-7 deploy/slurm-array.sh
#   (when every task is done, in the results directory:)
#   tlslab merge all.sqlite shard-*.sqlite && tlslab report --db all.sqlite --list
#
# Environment: TLSLAB (the binary, default tlslab on PATH), TLSLAB_PRESET
# (default kex-matrix), TLSLAB_ARGS (extra options, e.g. "--runs 10"),
# TLSLAB_OUT (the results directory, default ./tlslab-shards; on a shared
# file system so the files can be collected).
#SBATCH --job-name=tlslab
#SBATCH --cpus-per-task=2
#SBATCH --exclusive
set -euo pipefail

: "${SLURM_ARRAY_TASK_ID:?submit with sbatch --array=0-N}"
: "${SLURM_ARRAY_TASK_COUNT:?submit with sbatch --array=0-N}"
first=${SLURM_ARRAY_TASK_MIN:-0}
index=$((SLURM_ARRAY_TASK_ID - first + 1))
out=${TLSLAB_OUT:-$PWD/tlslab-shards}
mkdir -p "$out"
# A requeued task starts its shard afresh (no half run kept).
rm -f "$out/shard-$SLURM_ARRAY_TASK_ID.sqlite"

# TLSLAB_ARGS is split into words on purpose.
# shellcheck disable=SC2086
exec "${TLSLAB:-tlslab}" handshake --preset "${TLSLAB_PRESET:-kex-matrix}" ${TLSLAB_ARGS:-} \
    --shard "$index/$SLURM_ARRAY_TASK_COUNT" \
    --db "$out/shard-$SLURM_ARRAY_TASK_ID.sqlite" --quiet
