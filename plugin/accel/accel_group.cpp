#include "plugin/accel/accel_group.h"

#include "collectives/planner/alltoall_plan.h"
#include "collectives/planner/exchange_plan.h"
#include "plugin/accel/accel_comm.h"
#include "plugin/accel/accel_route.h"
#include "plugin/accel/accel_stall_report.h"
#include "plugin/core/nccl_symbols.h"
#include "plugin/core/warn.h"
#include "plugin/cupti/cupti_correlate.h"
#include "plugin/runtime/recorder.h"

namespace ncclscope::plugin {
namespace {

namespace nc = collectives;

CommState* HeldComm(const CallFrame& f) {
  return static_cast<CommState*>(f.ts->held_comm);
}

// The held call reaches NCCL now, as it would have at the call (the profiler plugin's events of
// it are numbered from the call in progress, as PointToPoint marks it).
ncclResult_t Forward(const CallFrame& f, const HeldP2p& h) {
  f.ts->call_op = static_cast<uint32_t>(h.send ? trace::OpType::kSend : trace::OpType::kRecv);
  f.ts->call_peer = h.peer;
  const ncclResult_t r =
      h.send ? CorrelatedCall(
                   f, NCCLSCOPE_FORWARD(Send, h.buffer, h.count, h.dtype, h.peer, h.comm, h.stream))
             : CorrelatedCall(f, NCCLSCOPE_FORWARD(Recv, h.buffer, h.count, h.dtype, h.peer, h.comm,
                                                   h.stream));
  f.ts->call_op = 0;
  return r;
}

// Its record, numbered as PointToPoint numbers a call NCCL took.
void Record(const CallFrame& f, CommState* cs, const HeldP2p& h, ncclResult_t r, bool accelerated) {
  trace::RecordData d = h.record;
  d.result = static_cast<int32_t>(r);
  if (r == ncclSuccess || r == ncclInProgress) d.seq = cs->NextP2PSeq(h.send, h.peer);
  if (accelerated) d.flags |= trace::kFlagAccelerated;
  EmitDeviceRecord(f, d, h.stream);
}

// Every held call on one stream: the exchange runs on one.
bool OneStream(const AccelComm& ac) {
  for (const HeldP2p& h : ac.held) {
    if (h.stream != ac.held.front().stream) return false;
  }
  return true;
}

}  // namespace

bool HoldP2p(const CallFrame& f, CommState* cs, ncclComm_t comm, bool send, void* buffer,
             size_t count, ncclDataType_t dtype, int peer, cudaStream_t stream,
             const trace::RecordData& d) noexcept {
  ThreadState& ts = *f.ts;
  if (ts.group_depth == 0 || cs == nullptr) return false;
  if (ts.held_comm != nullptr && ts.held_comm != cs) FlushHeldP2p(f);
  AccelComm* ac = cs->accel.get();
  const int nranks = cs->nranks.load(std::memory_order_acquire);
  if (ac == nullptr || !ac->ready || cs->AbortedByWatchdog() ||
      nc::NcclTypeBytes(static_cast<int32_t>(dtype)) == 0 || peer < 0 || peer >= nranks ||
      ac->held.size() >= AccelComm::kMaxHeld) {
    FlushHeldP2p(f);  // what came before it reaches NCCL first
    return false;
  }
  HeldP2p h;
  h.buffer = buffer;
  h.count = count;
  h.dtype = dtype;
  h.peer = peer;
  h.send = send;
  h.comm = comm;
  h.stream = stream;
  h.record = d;
  h.record.comm_id = cs->id;
  h.record.count = count;
  h.record.dtype = dtype;
  h.record.peer = peer;
  ac->held.push_back(h);  // reserved at set-up: no allocation
  ts.held_comm = cs;
  return true;
}

void FlushHeldP2p(const CallFrame& f) noexcept {
  CommState* cs = HeldComm(f);
  if (cs == nullptr) return;
  f.ts->held_comm = nullptr;
  AccelComm* ac = cs->accel.get();
  for (const HeldP2p& h : ac->held) Record(f, cs, h, Forward(f, h), false);
  ac->held.clear();
}

void EndHeldGroup(const CallFrame& f) noexcept {
  CommState* cs = HeldComm(f);
  if (cs == nullptr) return;
  AccelComm* ac = cs->accel.get();
  const cuda::Driver* cu = LoadedAccelDriver(f.rt->config);
  if (cu == nullptr || !ac->ready || ac->held.empty() || !OneStream(*ac)) {
    FlushHeldP2p(f);
    return;
  }
  // A kernel of this communicator gave up waiting: NCCL from now on, as ReadyComm decides.
  if (NoticeAccelStall(*ac, *f.rt->ring, f.t_enter)) {
    ac->ready = false;
    ac->why_not = "a kernel gave up waiting for a peer";
    FlushHeldP2p(f);
    return;
  }
  const cudaStream_t stream = ac->held.front().stream;
  nc::ExchangeOp ops[AccelComm::kMaxHeld];
  for (size_t i = 0; i < ac->held.size(); ++i) {
    const HeldP2p& h = ac->held[i];
    ops[i] = {h.peer, h.send, h.count * nc::NcclTypeBytes(static_cast<int32_t>(h.dtype))};
  }
  nc::ExchangeCall call;
  call.ops = ops;
  call.nops = ac->held.size();
  call.rank = ac->rank;
  call.nranks = ac->nranks;
  call.single_node = call.peers_reachable = true;  // the set-up agreed on both
  call.capturing = StreamCapturing(*cu, stream);
  call.gpu = ac->gpu;
  call.buffer_bytes = ac->buffer_bytes;
  const nc::ExchangePlan plan = nc::PlanExchange(call);
  if (plan.nparts == 0) {
    FlushHeldP2p(f);
    return;
  }
  ExchangePartBuffer parts[nc::kMaxExchangeParts];
  bool routed[AccelComm::kMaxHeld] = {};
  for (uint32_t i = 0; i < plan.nparts; ++i) {
    const HeldP2p& h = ac->held[plan.part_op[i]];
    parts[i] = {h.buffer, ops[plan.part_op[i]].bytes, h.peer, h.send};
    routed[plan.part_op[i]] = true;
  }
  if (!LaunchAccelExchange(*cu, ac, plan, parts, reinterpret_cast<CUstream>(stream))) {
    ac->ready = false;
    ac->why_not = "a kernel launch failed";
    Warn("NCCLSCOPE_ACCEL: kernel launch failed on communicator %s; it goes to NCCL from now",
         cs->name.c_str());
    FlushHeldP2p(f);
    return;
  }
  f.ts->held_comm = nullptr;
  for (size_t i = 0; i < ac->held.size(); ++i) {
    const HeldP2p& h = ac->held[i];
    if (routed[i]) {
      Record(f, cs, h, ncclSuccess, true);
    } else {
      Record(f, cs, h, Forward(f, h), false);
    }
  }
  ac->held.clear();
}

}  // namespace ncclscope::plugin
