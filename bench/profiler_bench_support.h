// What the profiler-callback benchmarks share (profiler_event_bench, plugin_only_event_bench): a
// count of the process's heap allocations, and a main that runs the benchmarks with the ring in a
// private temporary directory.
#pragma once

#include <cstdint>

namespace ncclscope::bench {

// Heap allocations of the process so far: every one goes through malloc (operator new included),
// which the support library replaces with a counting one.
uint64_t MallocsSoFar();

// Runs the registered benchmarks with NCCLSCOPE_DIR a new private directory (removed at the end),
// completion tracking and the watchdog off. Returns main's exit status.
int RunWithPrivateRingDir(int argc, char** argv);

}  // namespace ncclscope::bench
