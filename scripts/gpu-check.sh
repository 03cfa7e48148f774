#!/usr/bin/env bash
# Runs ncclscope's own kernels on a real GPU and checks them (docs/collectives.md, "On a real GPU"):
# prints the GPU, runs ncclscope-gpu-check (built on a machine without a GPU and carried here) with
# sizes and repetitions that take about 4-6 minutes on one H200 (estimated), and writes the log
# and the summary table to $OUT when it is set. Exit status: the check's (0 all right, 1 a wrong
# result or an error, 3 a hung kernel), 124 when the whole run outlived GPU_CHECK_TIMEOUT, 2 when
# the binary is missing.
# Usage: scripts/gpu-check.sh [path/to/ncclscope-gpu-check] [more options for the check]
set -u -o pipefail
cd "$(dirname "$0")/.."
bin=build/bin/ncclscope-gpu-check
if [[ $# -gt 0 && $1 != -* ]]; then
  bin=$1
  shift
fi
if [[ ! -x $bin ]]; then
  echo "gpu-check: no executable $bin (build the ncclscope-gpu-check target and carry it)" >&2
  exit 2
fi
dir=${OUT:-$(mktemp -d)}
mkdir -p "$dir"
log=$dir/gpu-check.log
summary=$dir/gpu-check-summary.txt

{
  echo "gpu-check: $(date -u +%Y-%m-%dT%H:%M:%SZ) on $(hostname), kernel $(uname -r)"
  if command -v nvidia-smi >/dev/null; then
    nvidia-smi --query-gpu=index,name,driver_version,memory.total,compute_mode,clocks.max.sm \
      --format=csv,noheader || true
  else
    echo "nvidia-smi: not found"
  fi
} 2>&1 | tee "$log"

# (a) every rank count 2-8 on one device, every size class of the table, 20 runs of each case up
# to 1 MiB and 3 of each larger one (to 64 MiB), the epoch counter wrapping after 40 calls of each
# rank count, the absent-rank check with a 2 s bounded wait; the exchange kernel's three groups
# (the same run counts; chunk counters wrapping) and its absent-rank check with 0.5 s; (b) 2, 4
# and 8 processes over CUDA IPC, 3 runs of each case up to 256 KiB; (c) timings and a 256 MiB
# device-to-device copy. (a) and (c) include the MoE dispatch/combine kernels (on by default): 20
# runs of each small shape and of the 128-token low-latency shape (hidden 7168, top-8) for every
# rank count, 3 of the 4096-token shape for 8 ranks, their absent-rank check with the same 2 s;
# about a minute more (add --moe off or --moe-ranks 8 for a shorter run).
timeout --kill-after=15 "${GPU_CHECK_TIMEOUT:-540}" "$bin" \
  --ranks 2-8 --reps 20 --big-reps 3 --max-bytes 64M \
  --ipc-ranks 2,4,8 --ipc-reps 3 --ipc-max-bytes 256k \
  --stall-timeout-ms 2000 --exchange-stall-timeout-ms 500 --copy-bytes 256M "$@" 2>&1 |
  tee -a "$log"
rc=${PIPESTATUS[0]}

sed -n '/^==== ncclscope-gpu-check summary/,$p' "$log" >"$summary"
if [[ $rc -eq 124 || $rc -eq 137 ]]; then
  echo "gpu-check: killed after ${GPU_CHECK_TIMEOUT:-540} s: a hang, or too slow for this budget" \
    | tee -a "$log" "$summary"
fi
echo "gpu-check: exit $rc; log $log, summary $summary"
exit "$rc"
