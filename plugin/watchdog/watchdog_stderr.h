// The watchdog's stderr output: one write(2) per block, so it is not interleaved with the lines of
// other threads. Each block is also a mark in the "ncclscope" NVTX domain of a forwarded NVTX tool
// (Nsight Systems), so suspects, hangs and their resolution show on its timeline. Thread-safe;
// never fails the caller (a closed stderr loses the text).
#pragma once

#include <unistd.h>

#include <string>

#include "plugin/nvtx/nvtx_injection.h"

namespace ncclscope::plugin {

inline void WriteStderr(const std::string& text) {
  NvtxMarkVerdict(text.c_str());
  size_t done = 0;
  while (done < text.size()) {
    const ssize_t w = write(STDERR_FILENO, text.data() + done, text.size() - done);
    if (w <= 0) return;
    done += static_cast<size_t>(w);
  }
}

}  // namespace ncclscope::plugin
