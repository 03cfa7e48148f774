#!/usr/bin/env bash
# Builds and runs every test: the full suite with warnings as errors, then the unit tests under
# AddressSanitizer + UndefinedBehaviorSanitizer and the concurrency tests under ThreadSanitizer.
# Usage: scripts/test.sh [--quick]   (--quick: only the main build, no sanitizer builds)
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
jobs=$(nproc)

build_and_test() {  # dir, ctest label filter ("" = all), targets ("" = all), extra cmake args...
  local dir=$1 label=$2 targets=$3
  shift 3
  cmake -S . -B "$dir" -G Ninja -DNCCLSCOPE_WERROR=ON "$@" >/dev/null
  if [ -n "$targets" ]; then
    # shellcheck disable=SC2086  # a list of target names
    cmake --build "$dir" -j"$jobs" --target $targets
  else
    cmake --build "$dir" -j"$jobs"
  fi
  if [ -n "$label" ]; then
    ctest --test-dir "$dir" --output-on-failure -j"$jobs" -L "$label"
  else
    ctest --test-dir "$dir" --output-on-failure -j"$jobs"
  fi
}

echo "== main build: every test"
build_and_test build "" ""
[ "${1:-}" = "--quick" ] && exit 0
echo "== AddressSanitizer + UndefinedBehaviorSanitizer: unit tests"
# Tests labelled "unit" run in-process or fork their own children; preload tests are left out
# because a sanitized libncclscope.so cannot be preloaded into unsanitized programs.
build_and_test build-asan unit \
  "trace_tests plugin_tests plugin_recording_test plugin_profiler_test plugin_profiler_abi_test \
   ring_reader_fuzz sim_emulator_tests sim_profiler_events_test sim_scenario_tests \
   hang_detector_tests watchdog_tests exporters_tests exporter_fuzz" \
  -DNCCLSCOPE_SANITIZE=address,undefined -DNCCLSCOPE_BUILD_BENCH=OFF
echo "== ThreadSanitizer: the ring's and the probe's concurrency tests"
# Run as whole binaries: they hold every test of the ring and of the probe's lock-free parts.
cmake -S . -B build-tsan -G Ninja -DNCCLSCOPE_WERROR=ON -DNCCLSCOPE_SANITIZE=thread \
  -DNCCLSCOPE_BUILD_BENCH=OFF >/dev/null
cmake --build build-tsan -j"$jobs" --target trace_tests plugin_tests plugin_profiler_test
build-tsan/bin/trace_tests
build-tsan/bin/plugin_tests
build-tsan/bin/plugin_profiler_test
echo "== lint: clang-format, clang-tidy on changed code"
scripts/lint.sh build
