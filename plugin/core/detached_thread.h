// The probe's own threads (the background thread, the watchdog's): detached, so they neither keep
// the process alive nor block its exit or a fork, and started with every signal blocked, since
// signals belong to the application (Python, PyTorch).
#pragma once

namespace ncclscope::plugin {

// Starts fn(arg) on a detached thread named `name` (15 characters at most, as Linux keeps).
// Returns 0, or pthread_create's error. Thread-safe.
int StartDetachedThread(void* (*fn)(void*), void* arg, const char* name) noexcept;

}  // namespace ncclscope::plugin
