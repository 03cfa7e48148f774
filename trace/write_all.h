// Writing a whole buffer to a file descriptor: write(2) may write less than asked (a signal, a
// full pipe, a quota) and must be called again for the rest. Shared by every writer of files
// (digests, Flight Recorder dumps, the watchdog's verdict), in and out of the training process.
#pragma once

#include <cstddef>

namespace ncclscope::trace {

// Writes all `size` bytes at `data` to fd, retrying after EINTR and partial writes. False when a
// write fails, with errno saying why (EIO when the file takes no more bytes without an error).
// Thread-safe as write(2) is; no allocation.
bool WriteAll(int fd, const void* data, size_t size) noexcept;

}  // namespace ncclscope::trace
