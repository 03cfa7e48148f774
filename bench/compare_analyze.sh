#!/usr/bin/env bash
# A/B of `ncclscope analyze` on one synthetic 4096-rank job (bench/synth_job, ~8.2 GiB in /tmp):
# runs the two given ncclscope binaries alternately RUNS times each (default 3), warm page cache,
# and prints wall/CPU/RSS, the --timing line and the headline of each run. Build the baseline in a
# separate worktree (git worktree add /tmp/base COMMIT; Release) and pass its bin/ncclscope first.
# Usage: bench/compare_analyze.sh BASE_NCCLSCOPE NEW_NCCLSCOPE [synth_job options]
set -euo pipefail
if [ $# -lt 2 ]; then
  echo "usage: $0 BASE_NCCLSCOPE NEW_NCCLSCOPE [synth_job options]" >&2
  exit 2
fi
base=$1 new=$2
shift 2
repo=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILD_DIR:-$repo/build-sc}
cmake -S "$repo" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$build" --target synth_job -j2 >/dev/null

work=$(mktemp -d /tmp/ncclscope-compare-XXXX)
trap 'rm -rf "$work"' EXIT
"$build/bin/synth_job" "$work/job" "$@" | grep -E '^(culprit|records):'
sync
for i in $(seq 1 "${RUNS:-3}"); do
  for bin in "$base" "$new"; do
    echo "[$i $bin] load $(cut -d' ' -f1 /proc/loadavg)"
    /usr/bin/time -f "[$i $bin] wall %e s, cpu %U + %S s, max RSS %M KiB" "$bin" analyze \
      "$work/job" --job-ended --no-process-checks --json --timing >"$work/out.json" \
      2>"$work/time.txt" || true
    grep -E '^(timing:|\[)' "$work/time.txt"
    jq -r '.verdicts[0].headline' "$work/out.json" | cut -c1-160
  done
done
