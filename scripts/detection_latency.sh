#!/usr/bin/env bash
# Watchdog detection latency (issue "Verdicts"): plays every hang scenario of the catalogue under
# `ncclscope sim` with default settings and prints, per scenario, the verdict the first detecting
# rank wrote and how long after the job's start `verdict.json` appeared. The faults strike within
# the first few steps (1 ms of compute each), so that time bounds the fault-to-verdict latency from
# above. Target: <= 10 s.
# Usage: scripts/detection_latency.sh [BUILD_DIR]   (RANKS="8 32" by default)
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$repo/build}
ranks_list=${RANKS:-"8 32"}
scenarios=(stuck-before hang skip extra-op wrong-op wrong-count wrong-dtype wrong-redop wrong-root
  wrong-peer p2p-cycle never-join never-join-world crash-sigkill crash-abort crash-segfault
  early-exit freeze)
work=$(mktemp -d /tmp/ncclscope-latency-XXXX)
trap 'rm -rf "$work"' EXIT

echo "| ranks | scenario | verdict (class, comm, op, culprits) | verdict.json after job start |"
echo "| --- | --- | --- | --- |"
for ranks in $ranks_list; do
  for s in "${scenarios[@]}"; do
    dir=$work/$s-$ranks
    start=$(date +%s.%N)
    "$build/bin/ncclscope" sim --ranks "$ranks" --scenario "$repo/sim/scenarios/$s.json" \
      --dir "$dir" --timeout 12 >/dev/null 2>&1 || true
    if [ ! -f "$dir/verdict.json" ]; then
      echo "| $ranks | $s | no verdict.json | - |"
      continue
    fi
    latency=$(echo "$(stat -c %.9Y "$dir/verdict.json") - $start" | bc)
    verdict=$(python3 -c '
import json, sys
v = json.load(open(sys.argv[1]))["verdicts"][0]
print(v["class"], v.get("comm_name", ""), v.get("op", ""), "#" + str(v.get("seq", "")),
      "culprits", ",".join(map(str, v["culprits"])) + (" (tie)" if v.get("tie") else ""))
' "$dir/verdict.json")
    printf '| %s | %s | %s | %.2f s |\n' "$ranks" "$s" "$verdict" "$latency"
    rm -rf "$dir"
  done
done
