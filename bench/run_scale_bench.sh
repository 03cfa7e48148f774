#!/usr/bin/env bash
# The correlator at scale: writes a synthetic job of 4096 ranks x ~10,000
# records (bench/synth_job, real ring files of 16384 slots, ~8.2 GiB) with one injected culprit,
# runs `ncclscope analyze` on it under /usr/bin/time (every detector, straggler detection included),
# checks the culprit is named and no straggler is, prints wall time, max RSS, the ingest rate and the
# load average against the targets (<= 10 s, <= 4 GiB), and deletes the files. Exit code 1 when a
# run misses the verdict or a target.
# Usage: bench/run_scale_bench.sh [synth_job options: --fault desync --culprit R --pp 1 ...]
# BUILD_DIR overrides the build (Release, default build-sc); COLD=1 also drops the page cache
# before a second, cold-cache run (needs root; skipped with a note when not permitted). RUNS=N
# repeats the warm run N times: on a shared machine the load, printed before each run, changes.
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILD_DIR:-$repo/build-sc}
target_s=10
target_kib=$((4 * 1024 * 1024))

cmake -S "$repo" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$build" --target ncclscope synth_job -j2 >/dev/null

avail_kib=$(df -Pk /tmp | awk 'NR == 2 { print $4 }')
if [ "$avail_kib" -lt $((10 * 1024 * 1024)) ]; then
  echo "need about 9 GiB free in /tmp, have $((avail_kib / 1024)) MiB" >&2
  exit 1
fi
work=$(mktemp -d /tmp/ncclscope-scale-XXXX)
trap 'rm -rf "$work"' EXIT

gen_start=$(date +%s.%N)
"$build/bin/synth_job" "$work/job" "$@" | tee "$work/plan.txt"
echo "generated in $(echo "$(date +%s.%N) - $gen_start" | bc) s, $(du -sh "$work/job" | cut -f1) on disk"
# Whatever the generator left dirty is written back now, not while the first analysis runs.
sync_start=$(date +%s.%N)
sync
echo "written back in $(echo "$(date +%s.%N) - $sync_start" | bc) s"
read -r _ want_class _ want_rank _ want_comm want_seq < <(grep '^culprit:' "$work/plan.txt")
want_seq=${want_seq#\#}

# One analysis; prints its numbers and checks the verdict. $1 names the page-cache state.
run() {
  local label=$1 rc=0
  echo "[$label] load average (1, 5, 15 min) before: $(cut -d' ' -f1-3 /proc/loadavg)"
  /usr/bin/time -v "$build/bin/ncclscope" analyze "$work/job" --job-ended --no-process-checks \
    --json --timing >"$work/out.json" 2>"$work/time.txt" || rc=$?
  local wall rss timing cpu
  wall=$(awk -F': ' '/Elapsed \(wall clock\)/ { n = split($2, p, ":"); s = 0;
           for (i = 1; i <= n; i++) s = s * 60 + p[i]; print s }' "$work/time.txt")
  rss=$(awk -F': ' '/Maximum resident set size/ { print $2 }' "$work/time.txt")
  # CPU time is the work itself; wall time also counts the other processes on the shared cores.
  cpu=$(awk -F': ' '/(User|System) time/ { s += $2 } END { print s }' "$work/time.txt")
  timing=$(grep '^timing:' "$work/time.txt" || echo "timing: (none; exit code $rc)")
  echo "[$label] exit code $rc; wall $wall s; cpu (user + sys) $cpu s; max RSS $((rss / 1024)) MiB"
  echo "[$label] $timing"
  # The injected fault: a verdict of its class that blames exactly the culprit.
  # A crash (exit code 3 or more, no JSON) meets no target, however fast it was.
  if [ "$rc" -ge 3 ] || ! jq -e .verdicts "$work/out.json" >/dev/null 2>&1; then
    echo "[$label] FAILED: no analysis (exit code $rc): $(grep -v '^timing:' "$work/time.txt" | head -3)"
    failed=1
    return
  fi
  local named first stragglers
  named=$(jq -c --arg c "$want_class" --argjson r "$want_rank" '[.verdicts | to_entries[]
            | select(.value.class == $c and .value.culprits == [$r])
            | {position: .key, comm: .value.comm_name, seq: .value.seq}] | first' "$work/out.json")
  first=$(jq -c '.verdicts[0] | {class, culprits, comm_name, seq}' "$work/out.json")
  # The headline is the injected fault itself: the culprit's first missed collective, not a later
  # one that other communicators' members wait for.
  headline=$(jq --arg c "$want_class" --argjson r "$want_rank" --arg comm "$want_comm" \
    --argjson seq "$want_seq" '.verdicts[0] | .class == $c and .culprits == [$r] and
      .comm_name == $comm and .seq == $seq' "$work/out.json")
  # The job has no straggler: every rank runs the same steps at the same pace until the hang.
  stragglers=$(jq '[.verdicts[] | select(.class == "straggler")] | length' "$work/out.json")
  echo "[$label] verdicts: $(jq '.verdicts | length' "$work/out.json"); first: $first"
  echo "[$label] injected: $want_class rank $want_rank on $want_comm #$want_seq;" \
       "named as $want_class rank $want_rank: $([ "$named" != null ] && echo "yes $named" || echo NO)"
  echo "[$label] headline is the injected fault: $([ "$headline" = true ] && echo yes || echo NO)"
  echo "[$label] straggler verdicts (none injected): $stragglers" \
       "$([ "$stragglers" -eq 0 ] && echo OK || echo FALSE)"
  echo "[$label] targets: wall <= $target_s s: $(echo "$wall <= $target_s" | bc | sed 's/1/MET/;s/0/MISSED/');" \
       "max RSS <= 4 GiB: $([ "$rss" -le $target_kib ] && echo MET || echo MISSED)"
  if [ "$named" = null ] || [ "$headline" != true ] || [ "$stragglers" -ne 0 ] || [ "$(echo "$wall > $target_s" | bc)" = 1 ] ||
     [ "$rss" -gt $target_kib ]; then
    failed=1
  fi
}

failed=0

for i in $(seq 1 "${RUNS:-1}"); do
  run "page cache warm (right after generation), run $i"
done
if [ "${COLD:-0}" = 1 ]; then
  if sync && echo 3 >/proc/sys/vm/drop_caches 2>/dev/null; then
    run "page cache dropped"
  else
    echo "[cold] cannot drop the page cache here (not permitted); cold run skipped"
  fi
fi
echo "load average (1, 5, 15 min) after: $(cut -d' ' -f1-3 /proc/loadavg)"
exit "$failed"
