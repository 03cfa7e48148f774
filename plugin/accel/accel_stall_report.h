// Telling about a kernel of ncclscope's own collectives that gave up waiting for a peer
// (docs/collectives.md, stall check): one warning line and one accel_stall record
// (trace/record.h) per communicator, whichever notices first: the communicator's next routed
// call, the background thread's poll at the heartbeat's period, or the process's exit.
#pragma once

#include <cstdint>
#include <memory>

#include "plugin/accel/accel_comm.h"
#include "trace/ring_writer.h"

namespace ncclscope::plugin {

// Keeps a ready communicator for the polls (kept alive by them, like its buffers). Thread-safe.
void WatchAccelComm(std::shared_ptr<AccelComm> c);

// Whether c's kernels gave up waiting; the first caller to see it warns and records it.
// Thread-safe.
bool NoticeAccelStall(AccelComm& c, trace::RingWriter& ring, int64_t now_ns) noexcept;

// Every watched communicator, from the background thread and at exit. Thread-safe.
void PollAccelStalls(trace::RingWriter& ring, int64_t now_ns) noexcept;

}  // namespace ncclscope::plugin
