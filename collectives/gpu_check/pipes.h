// Whole-message reads and writes on the pipes between the check and the processes it forks, each
// bounded by a deadline so a process that died or hung never blocks the check.
#pragma once

#include <cstddef>
#include <cstdint>

namespace ncclscope::gpu_check {

// False when the pipe closed, failed, or MonotonicNs() passed deadline_ns first.
bool ReadFull(int fd, void* buf, size_t bytes, int64_t deadline_ns);
bool WriteFull(int fd, const void* buf, size_t bytes);

}  // namespace ncclscope::gpu_check
