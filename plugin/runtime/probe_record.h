// A record the probe writes about itself or a communicator (profiler markers, its own aborts, mask
// changes, creations seen only by the profiler), not for a call the application made: op and
// communicator, entered and left now on the probe's clock, no device completion, no dtype,
// reduction or peer, the writing thread's id. Hot-path safe: no allocation, no system call after
// the thread's first record. Thread-safe.
#pragma once

#include <cstdint>

#include "plugin/core/probe_clock.h"
#include "plugin/core/thread_state.h"
#include "trace/record.h"

namespace ncclscope::plugin {

inline trace::RecordData ProbeRecord(trace::OpType op, uint64_t comm_id) noexcept {
  trace::RecordData d{};
  d.op = static_cast<uint32_t>(op);
  d.comm_id = comm_id;
  d.t_enter_ns = ProbeNowNs();
  d.t_exit_ns = d.t_enter_ns;
  d.t_device_done_ns = trace::kDoneUntracked;
  d.dtype = -1;
  d.redop = -1;
  d.peer = -1;
  d.tid = CachedTid(Tls());
  return d;
}

}  // namespace ncclscope::plugin
