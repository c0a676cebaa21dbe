#!/usr/bin/env bash
# tlslab on Slurm: one matrix split over an array job, one shard per task.
# The array is a range, FIRST-LAST or FIRST-LAST:STEP (a %LIMIT is fine):
# the task with the i-th id of its N measures shard i/N and writes
# shard-ID.sqlite; a requeued task redoes exactly its cells. A list of ids
# (--array=1,3,8) is refused: a task cannot tell which shard is its.
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
count=$SLURM_ARRAY_TASK_COUNT
first=${SLURM_ARRAY_TASK_MIN:-0}
step=${SLURM_ARRAY_TASK_STEP:-1}
last=${SLURM_ARRAY_TASK_MAX:-$((first + (count - 1) * step))}
# Slurm gives a task its id, the array's smallest and largest id, its step
# and its task count, not the list of ids: the ids must be FIRST, FIRST +
# STEP, ... LAST, or the shards would not add up to the matrix (a missing
# shard would make the merge silently partial).
if ((step < 1 || (last - first) % step != 0 || (last - first) / step + 1 != count ||
    (SLURM_ARRAY_TASK_ID - first) % step != 0)); then
  echo "slurm-array.sh: task $SLURM_ARRAY_TASK_ID: the array's $count task ids from $first to $last" \
    "are not one range of step $step, so this task cannot tell which shard is its;" \
    "submit a range, FIRST-LAST or FIRST-LAST:STEP (e.g. sbatch --array=0-$((count - 1))), not a list" >&2
  exit 2
fi
index=$(((SLURM_ARRAY_TASK_ID - first) / step + 1))
out=${TLSLAB_OUT:-$PWD/tlslab-shards}
mkdir -p "$out"
# A requeued task starts its shard afresh (no half run kept).
rm -f "$out/shard-$SLURM_ARRAY_TASK_ID.sqlite"

# TLSLAB_ARGS is split into words on purpose.
# shellcheck disable=SC2086
exec "${TLSLAB:-tlslab}" handshake --preset "${TLSLAB_PRESET:-kex-matrix}" ${TLSLAB_ARGS:-} \
    --shard "$index/$count" \
    --db "$out/shard-$SLURM_ARRAY_TASK_ID.sqlite" --quiet
