#!/usr/bin/env bash
# Instructions per intercepted call under callgrind: what libncclscope.so adds, in a count that
# machine load does not move (the timings of run_interposer_bench.sh do). For each entry point,
# the instructions inside it (the fake NCCL's body included) divided by its calls.
# Usage: bench/run_interposer_callgrind.sh   (BUILD_DIR: a Release build, default build-bench)
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILD_DIR:-$repo/build-bench}
cmake -S "$repo" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DNCCLSCOPE_BUILD_BENCH=ON >/dev/null
cmake --build "$build" --target interposer_bench -j"$(nproc)" >/dev/null

out=$(mktemp)
trap 'rm -f "$out"' EXIT
printf '%-10s %-28s %12s\n' "function" "benchmark" "Ir per call"
for pair in ncclAllReduce:AllReduce ncclSend:Send; do
  fn=${pair%%:*}
  bench=${pair##*:}
  valgrind --tool=callgrind --callgrind-out-file="$out" --toggle-collect="$fn" \
    "$build/bin/interposer_bench" --benchmark_filter="^$bench/on/threads:1\$" \
    --benchmark_min_time=0.05 >/dev/null 2>&1 || true  # its recording-off re-exec fails under valgrind
  [ -s "$out" ] || { echo "callgrind wrote nothing for $fn" >&2; exit 1; }
  # The caller tree: "<" lines name a function's callers with their call counts, then its "*"
  # line gives its inclusive instructions.
  callgrind_annotate --tree=caller --inclusive=yes "$out" 2>/dev/null | awk -v fn="$fn" -v b="$bench/on" '
    { line = $0; gsub(/,/, "", line) }
    / < / { if (match(line, /\([0-9]+x\)/)) callers += substr(line, RSTART + 1, RLENGTH - 3); next }
    / \* / { if (line ~ ":" fn " ") { split(line, f, " "); ir = f[1]; calls = callers }; callers = 0; next }
    /^$/ { callers = 0 }
    END { if (calls > 0) printf "%-10s %-28s %12.1f\n", fn, b, ir / calls }'
done
