#!/usr/bin/env bash
# The README demo: builds ncclscope, runs an 8-rank job on the CPU emulator with one injected fault
# (a hang in a tensor-parallel communicator), and shows what the probe recorded.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh >/dev/null
cmake -S . -B build -G Ninja >/dev/null
cmake --build build -j"$(nproc)" --target ncclscope ncclscope_probe ncclscope_sim_rank ncclsim_nccl ncclsim_cuda
dir=$(mktemp -d /tmp/ncclscope-demo-XXXXXX)
echo "== ncclscope sim --ranks 8 --scenario sim/scenarios/demo.json --dir $dir --timeout 10"
set +e
build/bin/ncclscope sim --ranks 8 --scenario sim/scenarios/demo.json --dir "$dir" --timeout 10
echo "(ncclscope sim exited $?: the injected hang keeps the job from finishing)"
set -e
echo
echo "== the last two calls each rank made (ncclscope dump $dir --tail 2)"
build/bin/ncclscope dump "$dir" --tail 2
echo
echo "Full trace: build/bin/ncclscope dump $dir   (--json for JSON lines)"
