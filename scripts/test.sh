#!/usr/bin/env bash
# Builds and runs every test: the full suite with warnings as errors, then the unit tests under
# AddressSanitizer + UndefinedBehaviorSanitizer and the concurrency tests under ThreadSanitizer,
# then lint. Ends with a table of each stage's wall time (also when a stage fails), so the cost of
# CI (.ci/run, budget 30 min on 2 cores) can be watched as the suite grows.
# Usage: scripts/test.sh [--quick]   (--quick: only the main build and its tests)
set -euo pipefail
cd "$(dirname "$0")/.."
jobs=$(nproc)

# Stage timing: begin_stage NAME ends the previous stage; the EXIT trap ends the last one and
# prints the table, marking the stage that was running when a command failed.
stage_names=()
stage_seconds=()
stage=""
stage_start=0
run_start=$SECONDS

end_stage() {  # [suffix for the name]
  [ -n "$stage" ] || return 0
  stage_names+=("$stage${1:-}")
  stage_seconds+=($((SECONDS - stage_start)))
  stage=""
}

begin_stage() {
  end_stage
  stage=$1
  stage_start=$SECONDS
  echo "== $stage"
}

print_stage_times() {
  local rc=$?
  if [ "$rc" -eq 0 ]; then end_stage; else end_stage " (FAILED, exit $rc)"; fi
  echo "== stage times (wall clock, $jobs cores)"
  printf '%-52s %8s\n' "stage" "seconds"
  for i in "${!stage_names[@]}"; do
    printf '%-52s %8d\n' "${stage_names[$i]}" "${stage_seconds[$i]}"
  done
  printf '%-52s %8d\n' "total" $((SECONDS - run_start))
}
trap print_stage_times EXIT

configure_and_build() {  # dir, targets ("" = all), extra cmake args...
  local dir=$1 targets=$2
  shift 2
  cmake -S . -B "$dir" -G Ninja -DNCCLSCOPE_WERROR=ON "$@" >/dev/null
  if [ -n "$targets" ]; then
    # shellcheck disable=SC2086  # a list of target names
    cmake --build "$dir" -j"$jobs" --target $targets
  else
    cmake --build "$dir" -j"$jobs"
  fi
}

# Sanitizer builds keep -O2 (the warnings -Werror sees depend on the optimizer) but only line-table
# debug info (-g1): reports still name file and line, and the compiler writes much less.
sanitizer_flags=(-DCMAKE_BUILD_TYPE=RelWithDebInfo "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O2 -g1 -DNDEBUG"
  "-DCMAKE_C_FLAGS_RELWITHDEBINFO=-O2 -g1 -DNDEBUG" -DNCCLSCOPE_BUILD_BENCH=OFF)

begin_stage "install-deps"
scripts/install-deps.sh

begin_stage "main: configure + build (-Werror, everything)"
configure_and_build build ""
begin_stage "main: every test"
# Most end-to-end tests wait: on a hung job's launcher timeout, on a watchdog's confirmation. So
# ctest gets four slots per core; a test that keeps cores busy claims several (its PROCESSORS
# property: 2 for an e2e job, 4 for a straggler scenario), and the 32-rank jobs run alone
# (RUN_SERIAL). A fuzz run takes one slot: in the sanitizer stage (one slot per core) more would
# keep the other unit tests waiting behind it.
ctest --test-dir build --output-on-failure -j"$((jobs * 4))"
if [ "${1:-}" = "--quick" ]; then
  exit 0
fi

# Tests labelled "unit" run in-process or fork their own children; preload tests are left out
# because a sanitized libncclscope.so cannot be preloaded into unsanitized programs. Every fuzz
# target must be in this list: ctest -L unit runs them by name and fails on one not built.
begin_stage "ASan+UBSan: configure + build (unit test targets)"
configure_and_build build-asan \
  "trace_tests plugin_tests plugin_recording_test plugin_profiler_test plugin_profiler_abi_test \
   ring_reader_fuzz sim_emulator_tests sim_cuda_device_tests sim_profiler_events_test sim_profiler_task_order_test \
   sim_scenario_tests hang_detector_tests watchdog_tests exporters_tests exporter_fuzz \
   correlator_fuzz scenario_fuzz \
   numerics_verdict_tests incident_tests digest_tests digest_fuzz incident_record_fuzz peer_sources_fuzz plugin_only_test \
   plugin_profiler_p2p_test plugin_nvtx_test plugin_nvtx_nccl_payload_test plugin_cupti_test \
   plugin_only_parts_test plugin_nvtx_nccl_payload_recorder_test nvtx_fuzz nvtx_nccl_payload_fuzz \
   collectives_tests numerics_tests plugin_only_proxy_test exporters_timeline_tests exporters_report_tests \
   timeline_fuzz flight_recorder_tests flight_recorder_fuzz fr_pickle_decode_fuzz fr_json_tests fr_json_fuzz fr_import_tests fr_import_fuzz \
   fr_export_tests fr_export_fuzz moe_library_test proc_environ_fuzz cuda_driver_tests" \
  -DNCCLSCOPE_SANITIZE=address,undefined "${sanitizer_flags[@]}"
begin_stage "ASan+UBSan: unit tests"
ctest --test-dir build-asan --output-on-failure -j"$jobs" -L unit

# Run as whole binaries: they hold every test of the ring, of the probe's lock-free parts and of
# the collectives' flag protocol (ranks as threads).
begin_stage "TSan: configure + build (ring, probe and collectives tests)"
configure_and_build build-tsan \
  "trace_tests plugin_tests plugin_profiler_test plugin_profiler_p2p_test collectives_tests \
   plugin_only_proxy_test" \
  -DNCCLSCOPE_SANITIZE=thread "${sanitizer_flags[@]}"
begin_stage "TSan: ring and probe tests"
build-tsan/bin/trace_tests
build-tsan/bin/plugin_tests
build-tsan/bin/plugin_profiler_test
build-tsan/bin/plugin_profiler_p2p_test
build-tsan/bin/collectives_tests
build-tsan/bin/plugin_only_proxy_test

begin_stage "lint: includes, clang-format, clang-tidy on changes"
scripts/lint.sh build
end_stage
