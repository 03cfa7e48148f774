#!/usr/bin/env bash
# Builds interposer_bench (Release) and prints what libncclscope.so adds to one intercepted call:
# medians of 10 repetitions of direct (pnccl* of a do-nothing fake NCCL) vs through the probe,
# with recording on (no completion tracking) and off. Extra arguments go to the benchmark.
# Usage: bench/run_interposer_bench.sh [--benchmark_min_time=1 ...]   (BUILD_DIR to override)
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILD_DIR:-$repo/build-bench}
target_ns=50  # at most 50 ns median added per call

cmake -S "$repo" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DNCCLSCOPE_BUILD_BENCH=ON >/dev/null
cmake --build "$build" --target interposer_bench -j"$(nproc)" >/dev/null

log=$(mktemp)
trap 'rm -f "$log"' EXIT
# Random interleaving mixes the repetitions of direct and probe runs, so slow drifts of the
# machine (other load, frequency) hit both sides alike instead of biasing the difference.
"$build/bin/interposer_bench" --benchmark_repetitions=10 --benchmark_report_aggregates_only=true \
  --benchmark_enable_random_interleaving=true "$@" | tee "$log"

echo
awk -v target="$target_ns" '
  /^summary / {
    delete v
    for (i = 2; i <= NF; i++) { split($i, kv, "="); v[kv[1]] = kv[2] }
    if (!header++) {
      printf "%-4s %-14s %5s %12s %12s %10s %13s %7s\n", "mode", "case", "calls", "direct ns",
             "ncclscope ns", "added ns", "added/call ns", "ratio"
    }
    per_call = v["added_ns"] / v["calls"]
    printf "%-4s %-14s %5d %12.2f %12.2f %10.2f %13.2f %7.1f\n", v["mode"], v["case"], v["calls"],
           v["direct_ns"], v["probe_ns"], v["added_ns"], per_call, v["ratio"]
    if (v["mode"] == "on" && v["case"] == "AllReduce") added = per_call
  }
  END {
    if (added == "") { print "no summary of ncclAllReduce with recording on (did it fail?)"; exit 1 }
    printf "\ntarget: at most %d ns median added per recorded call (ncclAllReduce, on): %s (%.1f ns)\n",
           target, added <= target ? "MET" : "MISSED", added
  }' "$log"
