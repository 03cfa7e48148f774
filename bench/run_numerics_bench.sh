#!/usr/bin/env bash
# NCCLSCOPE_NUMERICS's host cost: builds Release and prints
#  1. what an unsampled call costs with the mode on against the mode off, through the shipped
#     libncclscope.so (interposer_bench, ncclAllReduce recorded, no completion tracking), rounds
#     alternating off and on so drifts of the machine hit both; target: within 5 ns;
#  2. ncclscope's own part of a sampled call (numerics_probe_bench: decision, launches, event, the
#     record written) in front of a driver that returns at once.
# Usage: bench/run_numerics_bench.sh [rounds]   (BUILD_DIR to override, default build-bench)
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILD_DIR:-$repo/build-bench}
rounds=${1:-3}
target_ns=5

cmake -S "$repo" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DNCCLSCOPE_BUILD_BENCH=ON >/dev/null
cmake --build "$build" --target interposer_bench numerics_probe_bench -j"$(nproc)" >/dev/null

log=$(mktemp)
trap 'rm -f "$log"' EXIT
for ((r = 1; r <= rounds; r++)); do
  for mode in off all; do
    # A period no run reaches: every call after the first is an unsampled one.
    NCCLSCOPE_NUMERICS=$mode NCCLSCOPE_NUMERICS_EVERY=1000000000 NCCLSCOPE_WARN=0 \
      "$build/bin/interposer_bench" --benchmark_repetitions=10 \
      --benchmark_report_aggregates_only=true --benchmark_enable_random_interleaving=true \
      --benchmark_filter='^AllReduce/' | sed -n "s/^summary mode=on case=AllReduce .*added_ns=\([0-9.]*\).*/$mode \1/p" >>"$log"
  done
done
awk -v target="$target_ns" '
  { v[$1] = v[$1] " " $2; n[$1]++; s[$1, n[$1]] = $2 }
  function median(m,   i, j, t, a) {
    for (i = 1; i <= n[m]; i++) a[i] = s[m, i]
    for (i = 1; i <= n[m]; i++) for (j = i + 1; j <= n[m]; j++) if (a[j] < a[i]) { t = a[i]; a[i] = a[j]; a[j] = t }
    return n[m] % 2 ? a[(n[m] + 1) / 2] : (a[n[m] / 2] + a[n[m] / 2 + 1]) / 2
  }
  END {
    printf "ncclAllReduce, ns added per recorded call, rounds:\n  numerics off:%s\n  numerics all, unsampled:%s\n", v["off"], v["all"]
    d = median("all") - median("off")
    printf "medians: off %.2f, on unsampled %.2f, difference %.2f ns\n", median("off"), median("all"), d
    printf "target: unsampled within %d ns of off: %s\n", target, (d <= target ? "MET" : "MISSED")
  }' "$log"
echo
"$build/bin/numerics_probe_bench" --benchmark_repetitions=10 --benchmark_report_aggregates_only=true |
  grep -E '^Benchmark|_median'
