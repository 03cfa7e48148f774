// The emulated communicator: identity, shared memory segment, channel ordering and state flags.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include <nccl.h>

#include "sim/emulator/comm_layout.h"
#include "sim/emulator/profiler.h"
#include "sim/emulator/reduce_kernels.h"
#include "sim/emulator/shm_segment.h"

namespace ncclsim {

// A reduction operator made by ncclRedOpCreatePreMulSum.
struct CustomRedOp {
  bool live = false;
  ncclDataType_t dtype = ncclFloat32;
  bool device_scalar = false;        // read the scalar when the operation runs
  uint8_t scalar[8] = {};            // host-immediate value
  const void* scalar_ptr = nullptr;  // device residence: emulated device memory is host memory
};

}  // namespace ncclsim

// ncclComm_t points to one of these. Never freed: an aborted communicator may still be queried,
// and stream work blocked forever may still reference it. Fields marked (issue) are touched only
// under issue_mu by the threads that call NCCL; the serving counters are advanced by stream
// workers.
struct ncclComm {
  ncclUniqueId id{};
  uint64_t id_hash = 0;
  std::string shm_name;
  int rank = 0;
  int nranks = 0;
  int cuda_dev = 0;
  ncclsim::ShmMapping mapping;
  ncclsim::SegmentView seg;

  std::mutex issue_mu;
  uint64_t boot_round = 0;         // (issue) last bootstrap round used
  uint64_t split_count = 0;        // (issue)
  uint64_t shrink_count = 0;       // (issue)
  std::vector<uint64_t> out_next;  // (issue) next ticket per peer for data this rank sends
  std::vector<uint64_t> in_next;   // (issue) next ticket per peer for data it receives
  std::vector<ncclsim::CustomRedOp> redops;  // (issue)
  // (issue) NCCL's sharedRes->hostStream, made when a launch first needs a host function
  // (launch_host_func.h).
  CUstream host_stream = nullptr;
  // Ring (me -> p) is used by one operation at a time, in issue order: the one whose ticket equals
  // out_serving[p]. Same for ring (p -> me) and in_serving[p].
  std::unique_ptr<std::atomic<uint64_t>[]> out_serving;
  std::unique_ptr<std::atomic<uint64_t>[]> in_serving;

  std::atomic<bool> joined{false};
  std::atomic<bool> aborted{false};
  std::atomic<bool> revoked{false};
  std::atomic<bool> destroyed{false};
  std::atomic<int> inflight{0};  // operations enqueued and not yet finished
  // Set at creation when a profiler plugin is loaded (NCCL_PROFILER_PLUGIN).
  ncclsim::ProfilerComm* profiler = nullptr;
};

namespace ncclsim {

using Comm = ::ncclComm;

// Creates this rank's communicator for `id`: maps the segment and publishes arrival. When `wait`
// is true, also blocks until all nranks arrived (see commFinishJoin). Thread-safe.
ncclResult_t commCreate(const ncclUniqueId& id, int nranks, int rank, int cuda_dev, bool wait,
                        Comm** out);

// True once every rank arrived; removes the segment's name then (every rank mapped it).
bool commPollJoin(Comm* comm);

// Blocks, sleeping, until commPollJoin(comm). Unbounded: the "init never joined" hang.
void commFinishJoin(Comm* comm);

// Blocks until the operations enqueued on comm have finished (or were abandoned by abort).
void commWaitIdle(Comm* comm);

// True when operations of comm must be abandoned (aborted or revoked).
inline bool commStopped(const Comm* comm) {
  return comm->aborted.load(std::memory_order_relaxed) ||
         comm->revoked.load(std::memory_order_relaxed);
}

// 64-bit FNV-1a of a unique id; names the segment and seeds derived ids.
uint64_t hashUniqueId(const ncclUniqueId& id);

// A unique id derived deterministically from a parent id and small integers (split, shrink).
ncclUniqueId deriveUniqueId(uint64_t parent_hash, uint64_t a, uint64_t b, uint64_t c);

// Fresh random unique id (magic + random bytes).
ncclUniqueId makeUniqueId();

}  // namespace ncclsim
