#!/usr/bin/env bash
# Watchdog detection latency, both stages: plays every hang scenario of the
# catalogue under `ncclscope sim` with default settings, watches the trace directory's
# verdict.json, and prints per scenario the verdict and how long after the job's start it was
# first a suspect and first a confirmed hang. The faults strike within the first few steps (1 ms of
# compute each), so these times bound the fault-to-verdict latency from above. Targets: suspect
# <= 10 s; a hang whose culprit is shown stuck (dead, frozen, desync, wait-for cycle) confirmed
# <= 10 s; any other wait confirmed at the 60 s floor (NCCLSCOPE_CONFIRM_FLOOR_MS).
# Usage: scripts/detection_latency.sh [BUILD_DIR]
#   RANKS="8 32" (default), TIMEOUT=75 (seconds each job may run: past the floor)
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$repo/build}
ranks_list=${RANKS:-"8 32"}
timeout=${TIMEOUT:-75}
scenarios=(stuck-before hang skip extra-op wrong-op wrong-count wrong-dtype wrong-redop wrong-root
  wrong-peer p2p-cycle never-join never-join-world crash-sigkill crash-abort crash-segfault
  early-exit freeze)
work=$(mktemp -d /tmp/ncclscope-latency-XXXX)
trap 'rm -rf "$work"' EXIT

echo "| ranks | scenario | verdict (class, comm, op, culprits) | suspect after | hang after |"
echo "| --- | --- | --- | --- | --- |"
for ranks in $ranks_list; do
  for s in "${scenarios[@]}"; do
    dir=$work/$s-$ranks
    # The watcher ends the job as soon as the hang is confirmed: nothing later is measured.
    python3 - "$build/bin/ncclscope" "$repo/sim/scenarios/$s.json" "$dir" "$ranks" "$timeout" \
      "$repo/scripts" <<'EOF'
import os, signal, subprocess, sys, time
bin, scenario, trace, ranks, timeout, scripts = sys.argv[1:]
sys.path.insert(0, scripts)
import verdict_watch
start = time.time()
job = subprocess.Popen([bin, "sim", "--ranks", ranks, "--scenario", scenario, "--dir", trace,
                        "--timeout", timeout], stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL, start_new_session=True)
first = {}
verdict = "no verdict.json"
while job.poll() is None:
    doc = verdict_watch.load(os.path.join(trace, "verdict.json"))
    if doc is None:
        time.sleep(0.1)
        continue
    stage = doc.get("stage")
    if stage in ("suspect", "hang") and stage not in first:
        first[stage] = time.time() - start
        verdict = verdict_watch.headline(doc)
    if stage == "hang":
        os.killpg(job.pid, signal.SIGTERM)
        break
    time.sleep(0.1)
job.wait()
fmt = lambda k: "%.2f s" % first[k] if k in first else "-"
print("| %s | %s | %s | %s | %s |" % (ranks, os.path.basename(scenario)[:-5], verdict,
                                      fmt("suspect"), fmt("hang")))
EOF
    rm -rf "$dir"
  done
done
