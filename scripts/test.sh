#!/usr/bin/env bash
# Builds and runs every test: the full suite with warnings as errors, then the unit tests under
# AddressSanitizer + UndefinedBehaviorSanitizer and the concurrency tests under ThreadSanitizer.
# Usage: scripts/test.sh [--quick]   (--quick: only the main build, no sanitizer builds)
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
jobs=$(nproc)

build_and_test() {  # dir, ctest label filter ("" = all), extra cmake args...
  local dir=$1 label=$2
  shift 2
  cmake -S . -B "$dir" -G Ninja -DNCCLSCOPE_WERROR=ON "$@" >/dev/null
  cmake --build "$dir" -j"$jobs"
  if [ -n "$label" ]; then
    ctest --test-dir "$dir" --output-on-failure -j"$jobs" -L "$label"
  else
    ctest --test-dir "$dir" --output-on-failure -j"$jobs"
  fi
}

echo "== main build: every test"
build_and_test build ""
[ "${1:-}" = "--quick" ] && exit 0
echo "== AddressSanitizer + UndefinedBehaviorSanitizer: unit tests"
build_and_test build-asan unit -DNCCLSCOPE_SANITIZE=address,undefined -DNCCLSCOPE_BUILD_BENCH=OFF
echo "== ThreadSanitizer: concurrency tests"
build_and_test build-tsan concurrency -DNCCLSCOPE_SANITIZE=thread -DNCCLSCOPE_BUILD_BENCH=OFF
