// What a fault does to the rank process itself. Each logs one line to stderr first, so a run's
// output says what was injected where.
#pragma once

#include <cuda.h>

#include <string>

#include "sim/scenario/scenario.h"

namespace ncclscope::sim {

// The calling thread never returns (a host thread stuck before a call, or never joining).
[[noreturn]] void blockForever(const std::string& why);

// Dies the way `mode` says: SIGKILL, abort(), or a real invalid memory access.
[[noreturn]] void crashNow(CrashMode mode, const std::string& why);

// Stops the whole process (SIGSTOP); returns only if someone sends SIGCONT.
void freezeNow(const std::string& why);

// exit(0) without destroying communicators: a rank that leaves the job early, cleanly.
[[noreturn]] void exitEarly(const std::string& why);

// Enqueues a host function that never returns: the stream, and every op after it, never completes.
CUresult blockStream(CUstream stream, const std::string& why);

// Prints "ncclscope-sim-rank: <line>" to stderr in one write. Thread-safe.
void logLine(const std::string& line);

}  // namespace ncclscope::sim
