#include "plugin/accel/accel_route.h"

#include <atomic>
#include <mutex>
#include <string>

#include "collectives/planner/alltoall_plan.h"
#include "collectives/planner/planner.h"
#include "collectives/twins/bounded_wait.h"
#include "cuda/driver.h"
#include "plugin/accel/accel_comm.h"
#include "plugin/accel/accel_stall_report.h"
#include "plugin/core/warn.h"
#include "plugin/runtime/recorder.h"

namespace ncclscope::plugin {
namespace {

namespace nc = collectives;

}  // namespace

const cuda::Driver* LoadedAccelDriver(const Config& config) noexcept {
  static std::once_flag once;
  static const cuda::Driver* driver = nullptr;
  try {
    std::call_once(once, [&] {
      std::string error;
      const cuda::Driver* shared = cuda::SharedDriver(config.cuda_library, &error);
      if (shared != nullptr && cuda::Supports(*shared, cuda::kUseAccel, &error)) {
        driver = shared;
      } else {
        WarnOnce(WarnKey::kAccel, "NCCLSCOPE_ACCEL: %s; every call goes to NCCL", error.c_str());
      }
    });
  } catch (...) {
    // std::call_once reports a failed lock or allocation by throwing: the calls go to NCCL.
  }
  return driver;
}

bool StreamCapturing(const cuda::Driver& cu, cudaStream_t stream) noexcept {
  CUstreamCaptureStatus capture = CU_STREAM_CAPTURE_STATUS_NONE;
  return cu.stream_is_capturing(reinterpret_cast<CUstream>(stream), &capture) != CUDA_SUCCESS ||
         capture != CU_STREAM_CAPTURE_STATUS_NONE;
}

namespace {

// What the call alone says, judged alike on every rank before anything is known of the GPUs
// (any generation with kernels; size limits come once the set-up agreed on one): a call failing
// this never triggers the communicator's set-up.
bool SymmetricEligible(nc::AllReduceCall c) {
  c.single_node = c.peers_reachable = true;
  c.gpu = nc::GpuClass::kHopper;
  const nc::AllReducePlan p = nc::PlanAllReduce(c);
  return p.fallback == nc::Fallback::kNone || p.fallback == nc::Fallback::kTooLarge;
}

bool SymmetricEligible(nc::AlltoAllCall c) {
  c.single_node = c.peers_reachable = true;
  c.gpu = nc::GpuClass::kHopper;
  const nc::AlltoAllPlan p = nc::PlanAlltoAll(c);
  return p.fallback == nc::Fallback::kNone || p.fallback == nc::Fallback::kAlltoAllTooLarge;
}

// Calls inside a group are fused by NCCL with the group's other work: never ours.
bool Routable(const CallFrame& f, const CommState* cs) {
  return cs != nullptr && f.ts->group_depth == 0;
}

// What the set-up agreed on (one host, every peer mapped, the GPU generation, the buffer) and the
// stream's capture state, into a call for the planner (AllReduceCall, AlltoAllCall).
template <typename Call>
void Agreed(const cuda::Driver& cu, const AccelComm& ac, cudaStream_t stream, Call* call) {
  call->single_node = call->peers_reachable = true;
  call->capturing = StreamCapturing(cu, stream);
  call->gpu = ac.gpu;
  call->buffer_bytes = ac.buffer_bytes;
}

// The sequence number the call's record will carry (the caller numbers it after the call).
uint64_t NextSeq(const CommState* cs) {
  return cs->coll_seq.load(std::memory_order_relaxed) + 1;
}

// Sets the communicator's side up (collectively: every rank must be at the same point), once.
void SetUpOnce(const CallFrame& f, CommState* cs, ncclComm_t comm, int nranks,
               const cuda::Driver& cu) {
  if (cs->accel != nullptr) return;
  cs->accel = SetUpAccelComm(cu, comm, cs->rank.load(std::memory_order_relaxed), nranks,
                             f.rt->config.accel_buffer,
                             static_cast<uint64_t>(f.rt->config.accel_timeout_ms) * 1'000'000);
  cs->accel->comm_id = cs->id;
  cs->accel->comm_name = cs->name;
  if (cs->accel->ready) {
    WatchAccelComm(cs->accel);
  } else {
    Warn("NCCLSCOPE_ACCEL: communicator %s stays on NCCL: %s", cs->name.c_str(),
         cs->accel->why_not.c_str());
  }
}

// The communicator's side, set up at its creation or else at its first eligible call (every rank
// is then at the same call) and still usable; null when the call goes to NCCL.
AccelComm* ReadyComm(const CallFrame& f, CommState* cs, ncclComm_t comm, int nranks,
                     const cuda::Driver** driver) {
  const cuda::Driver* cu = LoadedAccelDriver(f.rt->config);
  if (cu == nullptr) {
    return nullptr;
  }
  SetUpOnce(f, cs, comm, nranks, *cu);
  AccelComm* ac = cs->accel.get();
  // A kernel of this communicator gave up waiting: its output was undefined; NCCL from now on.
  if (ac->ready && NoticeAccelStall(*ac, *f.rt->ring, f.t_enter)) {
    ac->ready = false;
    ac->why_not = "a kernel gave up waiting for a peer";
  }
  if (!ac->ready) {
    return nullptr;
  }
  *driver = cu;
  return ac;
}

// After a launch: the call is ours, or (the launch failed) NCCL's from now on for this rank; the
// other ranks' kernels then wait for this one until their timeout and report it.
bool Launched(const CommState* cs, AccelComm* ac, bool ok, ncclResult_t* result) {
  if (ok) {
    *result = ncclSuccess;
    return true;
  }
  ac->ready = false;
  ac->why_not = "a kernel launch failed";
  Warn("NCCLSCOPE_ACCEL: kernel launch failed on communicator %s; it goes to NCCL from now",
       cs->name.c_str());
  return false;
}

}  // namespace

bool RouteAllReduce(const CallFrame& f, CommState* cs, ncclComm_t comm, const void* sendbuff,
                    void* recvbuff, size_t count, ncclDataType_t dtype, ncclRedOp_t op,
                    cudaStream_t stream, ncclResult_t* result) noexcept {
  if (!f.rt->config.accel) return false;
  if (!Routable(f, cs)) return false;
  nc::AllReduceCall call;
  call.nccl_dtype = static_cast<int32_t>(dtype);
  call.nccl_redop = static_cast<int32_t>(op);
  call.count = count;
  call.nranks = cs->nranks.load(std::memory_order_acquire);
  call.in_place = sendbuff == recvbuff;
  if (!SymmetricEligible(call)) return false;
  const cuda::Driver* cu = nullptr;
  AccelComm* ac = ReadyComm(f, cs, comm, call.nranks, &cu);
  if (ac == nullptr) return false;
  Agreed(*cu, *ac, stream, &call);
  const nc::AllReducePlan plan = nc::PlanAllReduce(call);
  if (plan.algorithm == nc::Algorithm::kNccl) return false;
  const bool ok = LaunchAccelAllReduce(*cu, ac, plan, sendbuff, recvbuff,
                                       reinterpret_cast<CUstream>(stream), NextSeq(cs));
  return Launched(cs, ac, ok, result);
}

bool RouteAlltoAll(const CallFrame& f, CommState* cs, ncclComm_t comm, const void* sendbuff,
                   void* recvbuff, size_t count, ncclDataType_t dtype, cudaStream_t stream,
                   ncclResult_t* result) noexcept {
  if (!f.rt->config.accel) return false;
  if (!Routable(f, cs)) return false;
  nc::AlltoAllCall call;
  call.nccl_dtype = static_cast<int32_t>(dtype);
  call.count = count;
  call.nranks = cs->nranks.load(std::memory_order_acquire);
  call.in_place = sendbuff == recvbuff;
  if (!SymmetricEligible(call)) return false;
  const cuda::Driver* cu = nullptr;
  AccelComm* ac = ReadyComm(f, cs, comm, call.nranks, &cu);
  if (ac == nullptr) return false;
  Agreed(*cu, *ac, stream, &call);
  const nc::AlltoAllPlan plan = nc::PlanAlltoAll(call);
  if (plan.algorithm == nc::Algorithm::kNccl) return false;
  const bool ok = LaunchAccelAlltoAll(*cu, ac, plan, sendbuff, recvbuff,
                                      reinterpret_cast<CUstream>(stream), NextSeq(cs));
  return Launched(cs, ac, ok, result);
}

void SetUpAccelAtCreation(const CallFrame& f, ncclComm_t comm) noexcept {
  if (!f.rt->config.accel || f.ts->group_depth != 0 || comm == nullptr) return;
  CommState* cs = LookupComm(f, comm);
  if (cs == nullptr || cs->accel != nullptr) return;
  const int nranks = cs->nranks.load(std::memory_order_acquire);
  const cuda::Driver* cu = LoadedAccelDriver(f.rt->config);
  if (nranks < 2 || cu == nullptr) return;
  try {
    SetUpOnce(f, cs, comm, nranks, *cu);
  } catch (...) {
    // Only the set-up's bookkeeping allocates; whatever failed, nothing may reach the host.
  }
}

}  // namespace ncclscope::plugin
