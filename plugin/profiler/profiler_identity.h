// Which of our communicators an NCCL profiler context belongs to. NCCL's commHash is its own hash
// of the unique id, not our trace id, so the two are joined through the ring instead: NCCL calls
// the profiler's init inside the creation call, while the interposer's "in call" record of that
// creation (which carries our id) is open. Cold path (once per communicator).
#pragma once

#include <cstdint>

#include "plugin/runtime/comm_state.h"
#include "plugin/runtime/runtime.h"
#include "trace/ring_writer.h"

namespace ncclscope::plugin {

// How many of the newest records FindCreatingComm looks at.
inline constexpr uint64_t kCreationScanRecords = 1024;

// Our id of the communicator being created with (rank, nranks), from the creation records of the
// ring: the open one of thread `tid` if there is one (a blocking creation: NCCL runs init on the
// caller's thread), else the only open unique-id creation of that rank and size (a creation
// finished on NCCL's own thread), else the only such creation issued inside a group whose
// ncclGroupEnd is still open (NCCL creates grouped communicators there, on its own threads). 0 when
// that does not single one out. Thread-safe, lock-free, no allocation.
uint64_t FindCreatingComm(const trace::RingWriter& ring, uint32_t tid, int rank,
                          int nranks) noexcept;

// The state of communicator `id` as rank `rank` in this process, or null when no live handle has
// it. A non-empty `name` (ncclConfig_t.commName as NCCL gave it to the profiler) must also be the
// state's name, which catches a creation matched to the wrong communicator. Scans the whole map:
// call once per communicator and cache. Thread-safe, lock-free.
CommState* FindCommState(const Runtime& rt, uint64_t id, int rank, const char* name) noexcept;

}  // namespace ncclscope::plugin
