#!/usr/bin/env bash
# The README demo: builds ncclscope, runs an 8-rank training-like job on the CPU emulator with one
# injected fault (rank 5 never issues a tensor-parallel allreduce), shows what the probe recorded and
# what ncclscope analyze concludes.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh >/dev/null
cmake -S . -B build -G Ninja >/dev/null
cmake --build build -j"$(nproc)" --target ncclscope ncclscope_probe ncclscope_sim_rank
dir=$(mktemp -d /tmp/ncclscope-demo-XXXXXX)
echo
echo "== ncclscope sim --ranks 8 --scenario sim/scenarios/demo.json --dir $dir --timeout 8"
set +e
build/bin/ncclscope sim --ranks 8 --scenario sim/scenarios/demo.json --dir "$dir" --timeout 8
echo "(ncclscope sim exited $?: the injected fault hangs the job, so its timeout ended it)"
set -e
echo
echo "== the last call each rank recorded (ncclscope dump $dir --tail 1)"
build/bin/ncclscope dump "$dir" --tail 1 | grep -v '^# comm'
echo
echo "== ncclscope analyze $dir --job-ended"
set +e
build/bin/ncclscope analyze "$dir" --job-ended
echo "(ncclscope analyze exited $?: 2 means a confirmed hang, deadlock, desync or dead rank; 4 a suspect)"
set -e
echo
echo "Everything recorded: build/bin/ncclscope dump $dir   (--json for JSON lines)"
