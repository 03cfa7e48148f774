// One communicator's side of ncclscope's own AllReduce (docs/collectives.md): the device buffers
// every rank registers (staging, scratch, flags), the peers' as mapped here, the kernels, and the
// call counter the flags are stamped with. Set up collectively at the communicator's first routed
// call; afterwards used by one thread at a time, as NCCL requires of a communicator's calls.
#pragma once

#include <cuda.h>
#include <nccl.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "collectives/planner/allreduce_kernel_args.h"
#include "collectives/planner/alltoall_plan.h"
#include "collectives/planner/exchange_plan.h"
#include "collectives/planner/planner.h"
#include "collectives/twins/bounded_wait.h"
#include "cuda/driver.h"
#include "trace/record.h"

namespace ncclscope::plugin {

// One ncclSend or ncclRecv a group holds back for the exchange (accel_group.h): its arguments and
// its record as made at the call (times, thread, NVTX step), completed when it is decided.
struct HeldP2p {
  void* buffer = nullptr;
  size_t count = 0;
  ncclDataType_t dtype = ncclInt8;
  int peer = -1;
  bool send = false;
  ncclComm_t comm = nullptr;
  cudaStream_t stream = nullptr;
  trace::RecordData record{};
};

struct AccelComm {
  bool ready = false;
  std::string why_not;  // when not ready: the reason every rank agreed on
  int rank = 0;
  int nranks = 0;
  collectives::GpuClass gpu = collectives::GpuClass::kUnknown;
  size_t buffer_bytes = 0;
  uint64_t timeout_ns = 0;
  uint32_t epoch = 0;  // of the last routed call
  // The collective sequence number of each of the last kEpochs routed calls, by epoch (read by
  // the background thread's stall poll too).
  static constexpr uint32_t kEpochs = 64;
  std::atomic<uint64_t> seq_of_epoch[kEpochs] = {};
  uint64_t comm_id = 0;                     // the communicator's trace identity
  std::string comm_name;                    // for the warning line
  std::atomic<bool> stall_reported{false};  // the stall was warned about and recorded, once
  CUdeviceptr staging = 0, scratch = 0, signal = 0, stall = 0;
  // The kernels' stall record in pinned host memory mapped for the device (stall is its device
  // address): the routing reads it at every call without a copy.
  collectives::KernelStall* stall_host = nullptr;
  const unsigned char* peer_staging[collectives::kMaxRanks] = {};
  unsigned char* peer_scratch[collectives::kMaxRanks] = {};
  collectives::Signal* peer_signal[collectives::kMaxRanks] = {};
  CUfunction kernel[2][3] = {};   // [one-shot, two-shot][fp16, fp32, bf16]
  CUfunction alltoall = nullptr;  // collectives/kernels/alltoall.cu
  CUfunction exchange = nullptr;  // collectives/kernels/exchange.cu
  // Grouped sends and receives (collectives/planner/exchange_plan.h): chunks sent to and taken from
  // each peer so far by the exchange kernel, as each peer counts them on its side.
  uint32_t sent_chunks[collectives::kMaxRanks] = {};
  uint32_t received_chunks[collectives::kMaxRanks] = {};
  // The sends and receives of the open group held back, in call order; kMaxHeld reserved at set-up
  // (no allocation on a call's path). Used by the communicator's calling thread only.
  static constexpr size_t kMaxHeld = 64;
  std::vector<HeldP2p> held;
  // The communicator's kernels share its buffers and flags, so they run one after another as
  // NCCL's operations on one communicator do, whatever streams they are issued on: each launch
  // waits for the previous one's event when it comes on another stream.
  CUevent last_launch = nullptr;
  CUstream last_stream = nullptr;
  bool launched = false;
};

// Collective over `comm` (every rank calls it at the same call, through NCCL itself: two
// allgathers on a stream of ours): allocates and registers this rank's buffers, loads the kernels,
// and maps the peers'. The result is ready on every rank or on none, with the reason. Blocks
// until the exchange is done.
std::unique_ptr<AccelComm> SetUpAccelComm(const cuda::Driver& cu, ncclComm_t comm, int rank,
                                          int nranks, size_t buffer_bytes, uint64_t timeout_ns);

// Launches one AllReduce planned by collectives::PlanAllReduce on `stream` (the caller's).
// Returns false when the launch failed: the caller sends the call to NCCL instead.
// `seq` is the collective sequence number the call's record will carry.
bool LaunchAccelAllReduce(const cuda::Driver& cu, AccelComm* c,
                          const collectives::AllReducePlan& plan, const void* sendbuff,
                          void* recvbuff, CUstream stream, uint64_t seq);

// Launches one ncclAlltoAll planned by collectives::PlanAlltoAll, as LaunchAccelAllReduce does.
bool LaunchAccelAlltoAll(const cuda::Driver& cu, AccelComm* c,
                         const collectives::AlltoAllPlan& plan, const void* sendbuff,
                         void* recvbuff, CUstream stream, uint64_t seq);

// One part of an exchange as the routing hands it over: a send's sendbuff or a receive's recvbuff.
struct ExchangePartBuffer {
  void* buffer = nullptr;
  size_t bytes = 0;
  int peer = -1;
  bool send = false;
};

// Launches the parts `plan` gave ncclscope (parts[i] for plan.part_op[i]), advancing the pairs'
// chunk counters once launched. False when the launch failed (counters unchanged).
bool LaunchAccelExchange(const cuda::Driver& cu, AccelComm* c,
                         const collectives::ExchangePlan& plan, const ExchangePartBuffer* parts,
                         CUstream stream);

// Whether a kernel of this communicator gave up waiting (read without a copy); *out gets what it
// wrote and the sequence number of its call. Thread: the communicator's caller.
bool AccelStalled(const AccelComm& c, collectives::Stall* out, uint64_t* seq);

}  // namespace ncclscope::plugin
