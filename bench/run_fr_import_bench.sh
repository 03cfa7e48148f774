#!/usr/bin/env bash
# Flight Recorder import at scale (target: 4096 dumps of 2,000 entries read
# in at most 10 s): writes a synthetic job's dumps (bench/fr_synth_dumps: 4096 ranks, tp 8, a
# data-parallel hang at the end), then times `ncclscope analyze DIR --json --timing` under
# /usr/bin/time: wall and CPU time, max RSS, the verdict, and the load average before the run.
# Twice: dumps without stack frames (what _dump_nccl_trace_json and includeStackTraces=False
# give), then with FRAMES Python frames per entry shared through the memo (torch's default).
# Deletes everything it wrote. Exit code 1 when a run fails or gives no hang verdict.
# Usage: bench/run_fr_import_bench.sh; BUILD_DIR overrides the build (Release, default build-sc);
# RANKS, ENTRIES, FRAMES override the job.
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILD_DIR:-$repo/build-sc}
ranks=${RANKS:-4096}
entries=${ENTRIES:-2000}
frames=${FRAMES:-16}

cmake -S "$repo" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$build" --target ncclscope fr_synth_dumps -j2 >/dev/null

work=$(mktemp -d /tmp/ncclscope-fr-import-XXXX)
trap 'rm -rf "$work"' EXIT
failed=0

run() {  # label, frames per entry
  local label=$1 k=$2 rc=0
  rm -rf "$work/dumps"
  "$build/bin/fr_synth_dumps" "$work/dumps" --ranks "$ranks" --entries "$entries" --frames "$k" \
    >"$work/plan.txt"
  local bytes
  bytes=$(awk '/^bytes:/ { print $2 }' "$work/plan.txt")
  sync
  echo "[$label] $ranks dumps x $entries entries, $k frames/entry, $((bytes / 1048576)) MiB;" \
    "load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
  /usr/bin/time -v "$build/bin/ncclscope" analyze "$work/dumps" --json --timing \
    >"$work/out.json" 2>"$work/time.txt" || rc=$?
  local wall rss cpu verdict
  wall=$(awk -F': ' '/Elapsed \(wall clock\)/ { n = split($2, p, ":"); s = 0;
    for (i = 1; i <= n; i++) s = s * 60 + p[i]; print s }' "$work/time.txt")
  cpu=$(awk -F': ' '/User time/ { u = $2 } /System time/ { s = $2 } END { print u + s }' \
    "$work/time.txt")
  rss=$(awk -F': ' '/Maximum resident/ { print int($2 / 1024) }' "$work/time.txt")
  verdict=$(python3 -c 'import json,sys; a=json.load(open(sys.argv[1]));
v=a["verdicts"][0] if a["verdicts"] else {}
print(v.get("class","none"), v.get("comm_name",""), v.get("op",""), v.get("seq",""), v.get("culprits",""))' \
    "$work/out.json" 2>/dev/null || echo "unreadable output")
  grep '^timing:' "$work/time.txt" || true
  echo "[$label] exit $rc, wall ${wall} s, cpu ${cpu} s, max RSS ${rss} MiB; verdict: $verdict"
  if [ "$rc" -ne 2 ]; then
    failed=1
    tail -5 "$work/time.txt" >&2
  fi
}

run "no frames" 0
run "$frames frames" "$frames"
exit $failed
