#!/usr/bin/env bash
# `ncclscope timeline` and `ncclscope report` at scale: writes the synthetic
# job of bench/run_scale_bench.sh (bench/synth_job: 4096 ranks x ~10,000 records, real ring files,
# ~8.2 GiB), then times under /usr/bin/time: the whole job as a Perfetto trace without the
# correlator (the writer alone, target <= 30 s), the same with verdicts marked (the correlator's
# time added), a window of 256 ranks in both formats, and the HTML report of the whole job. Prints wall and CPU time, max RSS, the trace's size
# and bytes per record, the load average before each run, and decodes nothing (the tests do).
# Deletes everything it wrote. Exit code 1 when a run fails or the writer misses its target.
# Usage: bench/run_timeline_bench.sh [synth_job options]; BUILD_DIR overrides the build (Release,
# default build-sc); RUNS=N repeats the whole-job run.
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILD_DIR:-$repo/build-sc}
target_s=30

cmake -S "$repo" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$build" --target ncclscope synth_job -j2 >/dev/null

avail_kib=$(df -Pk /tmp | awk 'NR == 2 { print $4 }')
if [ "$avail_kib" -lt $((24 * 1024 * 1024)) ]; then
  echo "need about 24 GiB free in /tmp (job and trace), have $((avail_kib / 1024)) MiB" >&2
  exit 1
fi
work=$(mktemp -d /tmp/ncclscope-timeline-XXXX)
trap 'rm -rf "$work"' EXIT

"$build/bin/synth_job" "$work/job" "$@" | tee "$work/plan.txt"
records=$(awk '/^records:/ { print $2 }' "$work/plan.txt")
sync

failed=0
# One timeline run: label, output file, then the options after DIR.
run() {
  local label=$1 out=$2 rc=0
  shift 2
  echo "[$label] load average (1, 5, 15 min) before: $(cut -d' ' -f1-3 /proc/loadavg)"
  /usr/bin/time -v "$build/bin/ncclscope" timeline "$work/job" -o "$out" "$@" \
    >"$work/stdout.txt" 2>"$work/time.txt" || rc=$?
  local wall rss cpu size
  wall=$(awk -F': ' '/Elapsed \(wall clock\)/ { n = split($2, p, ":"); s = 0;
           for (i = 1; i <= n; i++) s = s * 60 + p[i]; print s }' "$work/time.txt")
  rss=$(awk -F': ' '/Maximum resident set size/ { print $2 }' "$work/time.txt")
  cpu=$(awk -F': ' '/(User|System) time/ { s += $2 } END { print s }' "$work/time.txt")
  size=$(stat -c %s "$out" 2>/dev/null || echo 0)
  echo "[$label] exit code $rc; wall $wall s; cpu (user + sys) $cpu s; max RSS $((rss / 1024)) MiB;" \
       "trace $((size / 1024 / 1024)) MiB"
  echo "[$label] $(cat "$work/stdout.txt")"
  if [ "$rc" -ne 0 ]; then
    echo "[$label] FAILED: $(head -3 "$work/time.txt")"
    failed=1
  fi
  rm -f "$out"
  last_wall=$wall
  last_size=$size
}

for i in $(seq 1 "${RUNS:-1}"); do
  run "whole job, perfetto, no verdicts, run $i" "$work/job.pftrace" --no-verdicts
  echo "[whole job] $records records; $(echo "scale=1; $last_size / $records" | bc) bytes per record;" \
       "target wall <= $target_s s: $(echo "$last_wall <= $target_s" | bc | sed 's/1/MET/;s/0/MISSED/')"
  if [ "$(echo "$last_wall > $target_s" | bc)" = 1 ]; then failed=1; fi
done
run "whole job, perfetto, verdicts marked" "$work/job.pftrace"
run "ranks 0-255, perfetto, no verdicts" "$work/window.pftrace" --no-verdicts --ranks 0-255
run "ranks 0-255, chrome-json, no verdicts" "$work/window.json" --no-verdicts --ranks 0-255 \
  --format chrome-json
# The report: the correlator, the cost table of every file, and a timeline window.
echo "[report] load average (1, 5, 15 min) before: $(cut -d' ' -f1-3 /proc/loadavg)"
rc=0
/usr/bin/time -v "$build/bin/ncclscope" report "$work/job" -o "$work/report.html" \
  >"$work/stdout.txt" 2>"$work/time.txt" || rc=$?
echo "[report] exit code $rc; wall $(awk -F': ' '/Elapsed \(wall clock\)/ { n = split($2, p, ":");
  s = 0; for (i = 1; i <= n; i++) s = s * 60 + p[i]; print s }' "$work/time.txt") s;" \
  "max RSS $(($(awk -F': ' '/Maximum resident set size/ { print $2 }' "$work/time.txt") / 1024)) MiB;" \
  "page $(($(stat -c %s "$work/report.html" 2>/dev/null || echo 0) / 1024)) KiB; $(cat "$work/stdout.txt")"
if [ "$rc" -ne 0 ]; then failed=1; fi
echo "load average (1, 5, 15 min) after: $(cut -d' ' -f1-3 /proc/loadavg)"
exit "$failed"
