#include "plugin/accel_route.h"

#include <atomic>
#include <cstdio>
#include <mutex>
#include <string>

#include "collectives/bounded_wait.h"
#include "collectives/planner.h"
#include "plugin/accel_comm.h"
#include "plugin/accel_driver.h"
#include "plugin/accel_stall_report.h"
#include "plugin/warn.h"

namespace ncclscope::plugin {
namespace {

namespace nc = collectives;

thread_local char t_explanation[256];

// Formats into this thread's explanation: no allocation, every call may take this path.
void Explain(const char* format, const char* text) {
  std::snprintf(t_explanation, sizeof(t_explanation), format, text);
}

// The driver table, loaded once at the first routed call; null when it cannot be.
const AccelDriver* Driver(const Config& config) {
  static std::once_flag once;
  static AccelDriver driver;
  static bool loaded = false;
  std::call_once(once, [&] {
    std::string error;
    loaded = LoadAccelDriver(config.cuda_library, &driver, &error);
    if (!loaded) {
      WarnOnce(WarnKey::kAccel, "NCCLSCOPE_ACCEL: %s; every call goes to NCCL", error.c_str());
    }
  });
  return loaded ? &driver : nullptr;
}

// The calls every rank judges alike before anything is known of the GPUs: what the call says.
// A call failing these never triggers the communicator's set-up.
bool SymmetricEligible(const nc::AllReduceCall& c, nc::Fallback* why) {
  nc::AllReduceCall optimistic = c;
  optimistic.single_node = optimistic.peers_reachable = true;
  optimistic.capturing = false;
  optimistic.gpu = nc::GpuClass::kHopper;  // any generation with kernels: size limits come later
  optimistic.buffer_bytes = SIZE_MAX;
  const nc::AllReducePlan p = nc::PlanAllReduce(optimistic);
  *why = p.fallback;
  return p.fallback == nc::Fallback::kNone || p.fallback == nc::Fallback::kTooLarge;
}

}  // namespace

const char* LastRouteExplanation() noexcept {
  return t_explanation;
}

bool RouteAllReduce(const CallFrame& f, CommState* cs, ncclComm_t comm, const void* sendbuff,
                    void* recvbuff, size_t count, ncclDataType_t dtype, ncclRedOp_t op,
                    cudaStream_t stream, ncclResult_t* result) noexcept {
  if (!f.rt->config.accel) return false;
  if (cs == nullptr || f.ts->group_depth != 0) {
    Explain("nccl: %s", "inside a group, or a communicator ncclscope does not know");
    return false;
  }
  nc::AllReduceCall call;
  call.nccl_dtype = static_cast<int32_t>(dtype);
  call.nccl_redop = static_cast<int32_t>(op);
  call.count = count;
  call.nranks = cs->nranks.load(std::memory_order_acquire);
  call.in_place = sendbuff == recvbuff;
  nc::Fallback why = nc::Fallback::kNone;
  if (!SymmetricEligible(call, &why)) {
    Explain("nccl: %s", nc::FallbackText(why));
    return false;
  }
  const AccelDriver* cu = Driver(f.rt->config);
  if (cu == nullptr) {
    Explain("nccl: %s", "the CUDA driver lacks what ncclscope's kernels need");
    return false;
  }
  if (cs->accel == nullptr) {
    // The communicator's first eligible call: every rank is here at the same call.
    cs->accel = SetUpAccelComm(*cu, comm, cs->rank.load(std::memory_order_relaxed), call.nranks,
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
  AccelComm* ac = cs->accel.get();
  // A kernel of this communicator gave up waiting: its output was undefined; NCCL from now on.
  if (ac->ready && NoticeAccelStall(*ac, *f.rt->ring, f.t_enter)) {
    ac->ready = false;
    ac->why_not = "a kernel gave up waiting for a peer";
  }
  if (!ac->ready) {
    Explain("nccl: %s", ac->why_not.c_str());
    return false;
  }
  CUstreamCaptureStatus capture = CU_STREAM_CAPTURE_STATUS_NONE;
  call.single_node = call.peers_reachable = true;  // agreed at set-up
  call.capturing =
      cu->stream_is_capturing(reinterpret_cast<CUstream>(stream), &capture) != CUDA_SUCCESS ||
      capture != CU_STREAM_CAPTURE_STATUS_NONE;
  call.gpu = ac->gpu;
  call.buffer_bytes = ac->buffer_bytes;
  const nc::AllReducePlan plan = nc::PlanAllReduce(call);
  nc::ExplainPlan(plan, call, t_explanation, sizeof(t_explanation));
  if (plan.algorithm == nc::Algorithm::kNccl) return false;
  const uint64_t seq = cs->coll_seq.load(std::memory_order_relaxed) + 1;  // the record's
  if (!LaunchAccelAllReduce(*cu, ac, plan, sendbuff, recvbuff, reinterpret_cast<CUstream>(stream),
                            seq)) {
    // The other ranks launched: their kernels will wait for this one until the timeout and report
    // it. This rank's later calls go to NCCL.
    ac->ready = false;
    ac->why_not = "a kernel launch failed";
    Warn("NCCLSCOPE_ACCEL: kernel launch failed on communicator %s; it goes to NCCL from now",
         cs->name.c_str());
    Explain("nccl: %s", "a kernel launch failed");
    return false;
  }
  *result = ncclSuccess;
  return true;
}

}  // namespace ncclscope::plugin
