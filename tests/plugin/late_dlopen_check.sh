#!/bin/bash
# NCCL dlopen'ed after start: the preloaded probe must still forward every call and record it.
# Usage: late_dlopen_check.sh PROGRAM LIBNCCL PROBE RING_STATS
set -u
program=$1 libnccl=$2 probe=$3 ring_stats=$4
work=$(mktemp -d /tmp/ncclscope-late-XXXXXX)
trap 'rm -rf "$work"' EXIT
LD_PRELOAD=$probe NCCLSCOPE_DIR=$work/rings NCCLSCOPE_TRACK_COMPLETION=0 "$program" "$libnccl" ||
  { echo "FAIL: the program failed with the probe preloaded"; exit 1; }
stats=$("$ring_stats" "$work/rings")
records=$(echo "$stats" | sed -n 's/.*records=\([0-9]*\).*/\1/p')
# get_unique_id, comm_init_rank, allreduce, comm_destroy
[ "${records:-0}" -ge 4 ] || { echo "FAIL: expected 4 records, got: $stats"; exit 1; }
echo "ok: $stats"
