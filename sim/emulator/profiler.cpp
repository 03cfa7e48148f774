#include "sim/emulator/profiler.h"

#include <algorithm>
#include <string>

#include "sim/emulator/env_config.h"
#include "sim/emulator/op_desc.h"
#include "sim/emulator/profiler_dispatch.h"
#include "sim/emulator/profiler_names.h"
#include "sim/emulator/profiler_task_order.h"

namespace ncclsim {
namespace {

namespace ab = profabi;

// NCCL's ncclProfilerApiState (src/include/profiler.h): per thread.
enum class ApiPhase { kReset, kStarted, kStopped };
struct ApiState {
  int profiler_group_depth = 0;
  int mask = 0;
  ApiPhase phase = ApiPhase::kReset;
  void* group_api = nullptr;
  void* p2p_api = nullptr;
  void* coll_api = nullptr;  // never cleared by NCCL's stop (see appendTask)
};
thread_local ApiState t_api;

// The masks NCCL tests before each event: asking for a child event emits its ancestors.
constexpr int kGroupApiMask = ab::kEvGroupApi | ab::kEvP2pApi | ab::kEvCollApi |
                              ab::kEvKernelLaunch | ab::kEvGroup | ab::kEvColl | ab::kEvP2p |
                              ab::kEvProxyOp | ab::kEvProxyStep | ab::kEvKernelCh |
                              ab::kEvNetPlugin;
constexpr int kBelowTask = ab::kEvProxyOp | ab::kEvProxyStep | ab::kEvKernelCh | ab::kEvNetPlugin;
constexpr int kCollApiMask = ab::kEvCollApi | ab::kEvColl | kBelowTask;
constexpr int kP2pApiMask = ab::kEvP2pApi | ab::kEvP2p | kBelowTask;
constexpr int kGroupMask = ab::kEvGroup | ab::kEvColl | ab::kEvP2p | kBelowTask;
constexpr int kCollMask = ab::kEvColl | kBelowTask;
constexpr int kP2pMask = ab::kEvP2p | kBelowTask;

void* contextOf(const Comm* c) {
  return c->profiler != nullptr ? c->profiler->ctx : nullptr;
}

bool live(const Comm* c) {
  return c->profiler != nullptr && c->profiler->live.load(std::memory_order_acquire);
}

// ncclProfilerStartGroupApiEvent and ncclProfilerRecordGroupApiEventState(23), called for every
// task: the mask is read again each time; only the outermost group gets an event.
void groupApiStart(const Comm* c, int group_depth) {
  t_api.mask = prof::mask();
  if ((t_api.mask & kGroupApiMask) != 0 && t_api.profiler_group_depth == 0) {
    ab::Descr5 e{};
    e.type = ab::kEvGroupApi;
    e.groupApi.graphCaptured = false;
    e.groupApi.groupDepth = group_depth;
    prof::start(contextOf(c), &t_api.group_api, &e);
    t_api.profiler_group_depth = group_depth;
    t_api.phase = ApiPhase::kStarted;
  }
  if (t_api.phase == ApiPhase::kStarted) {
    t_api.phase = ApiPhase::kStopped;
    prof::record(t_api.group_api, ab::kStateGroupStartApiStop, nullptr);
  }
}

// collTaskAppend / p2pTaskAppend: the API event lasts while the task is appended.
void appendTask(const OpDesc& d, ProfTask* t, int group_depth) {
  const Comm* c = d.comm;
  groupApiStart(c, group_depth);
  ab::Descr5 e{};
  e.parentObj = t_api.group_api;
  if (t->p2p) {
    e.type = ab::kEvP2pApi;
    e.p2pApi = {t->send ? "Send" : "Recv", d.count, dtypeName(d.dtype), d.stream, false};
    if ((t_api.mask & kP2pApiMask) != 0) prof::start(contextOf(c), &t_api.p2p_api, &e);
    t->api = t_api.p2p_api;
  } else {
    e.type = ab::kEvCollApi;
    e.collApi = {funcName(d.kind), d.count, dtypeName(d.dtype), d.root, d.stream, false};
    if ((t_api.mask & kCollApiMask) != 0) prof::start(contextOf(c), &t_api.coll_api, &e);
    t->api = t_api.coll_api;
  }
  t->mask = t_api.mask;
  t->group_api = t_api.group_api;
  if (t->p2p) {
    prof::stop(t_api.p2p_api);
    t_api.p2p_api = nullptr;
  } else {
    // ncclProfilerStopCollApiEvent does not clear the handle: when a later call's mask asks for
    // no CollApi, NCCL stops the old handle again. So does the emulator.
    prof::stop(t_api.coll_api);
  }
}

void addP2p(ProfOp* op, bool send, int peer, const void* buff, const OpDesc& d) {
  ProfTask t;
  t.p2p = true;
  t.send = send;
  t.peer = peer;
  t.buff = buff;
  t.count = d.count;
  t.dtype = d.dtype;
  op->tasks.push_back(t);
}

// taskAppend (src/enqueue.cc): the tasks NCCL makes of one call, in its order.
void buildTasks(const OpDesc& d, ProfOp* op) {
  const int n = d.comm->nranks;
  const int me = d.comm->rank;
  const size_t part = d.count * dtypeSize(d.dtype);
  const char* send = static_cast<const char*>(d.send);
  const char* recv = static_cast<const char*>(d.recv);
  switch (d.kind) {
    case OpKind::kSend:
      addP2p(op, true, d.root, d.send, d);
      break;
    case OpKind::kRecv:
      addP2p(op, false, d.root, d.recv, d);
      break;
    case OpKind::kAlltoAll:
      for (int r = 0; r < n; ++r) {
        addP2p(op, true, r, send + size_t(r) * part, d);
        addP2p(op, false, r, recv + size_t(r) * part, d);
      }
      break;
    case OpKind::kGather:
      addP2p(op, true, d.root, send, d);
      if (me == d.root) {
        for (int r = 0; r < n; ++r) addP2p(op, false, r, recv + size_t(r) * part, d);
      }
      break;
    case OpKind::kScatter:
      if (me == d.root) {
        for (int r = 0; r < n; ++r) addP2p(op, true, r, send + size_t(r) * part, d);
      }
      addP2p(op, false, d.root, recv, d);
      break;
    default: {
      ProfTask t;
      // collTaskAppend: AllGather and Broadcast are counted in bytes of ncclInt8.
      const bool bytes = d.kind == OpKind::kAllGather || d.kind == OpKind::kBroadcast;
      t.count = bytes ? part : d.count;
      t.dtype = bytes ? ncclInt8 : d.dtype;
      op->tasks.push_back(t);
    }
  }
  // scheduleP2pTasksToPlan skips a send to self whose receive is in place: neither is planned.
  ProfTask* self_send = nullptr;
  ProfTask* self_recv = nullptr;
  for (ProfTask& t : op->tasks) {
    if (t.p2p && t.peer == me) (t.send ? self_send : self_recv) = &t;
  }
  if (self_send != nullptr && self_recv != nullptr && self_send->buff == self_recv->buff) {
    self_send->dropped = self_recv->dropped = true;
  }
}

}  // namespace

ProfilerComm* profilerCommInit(uint64_t comm_hash, const char* name, int nranks, int rank) {
  if (!prof::load()) return nullptr;
  auto* pc = new ProfilerComm;
  // Every rank is a node of its own here: every peer is reached through the network transport,
  // the one whose proxy emits ProxyOp and ProxyStep events.
  const ncclResult_t r = prof::init(&pc->ctx, comm_hash, name, nranks, nranks, rank);
  // As 2.28.9 (ncclProfilerPluginInit): a failed init is logged and NCCL goes on calling the
  // plugin with whatever context it wrote.
  if (r != ncclSuccess) {
    warnOnce("profiler-init", "profiler init failed with error " + std::to_string(int(r)) +
                                  "; continuing without profiler");
  }
  return pc;
}

void profilerCommFinalize(ProfilerComm* pc) {
  if (pc == nullptr || !pc->live.exchange(false)) return;
  // ncclProfilerPluginFinalize: only a communicator with a context is finalized.
  if (pc->ctx != nullptr) prof::finalize(pc->ctx);
}

void profilerEnqueueEnter() {
  if (prof::loaded() && t_api.profiler_group_depth > 0) ++t_api.profiler_group_depth;
}

void profilerTaskAppend(OpDesc* d, int group_depth) {
  if (!prof::loaded() || !live(d->comm)) return;
  const bool p2p_call = d->kind == OpKind::kSend || d->kind == OpKind::kRecv;
  // taskAppend: a collective of a 1-rank communicator is a copy (ncclLaunchOneRank), no task.
  if (d->comm->nranks == 1 && !p2p_call) return;
  auto op = std::make_shared<ProfOp>();
  buildTasks(*d, op.get());
  for (ProfTask& t : op->tasks) appendTask(*d, &t, group_depth);
  d->prof = std::move(op);
}

void profilerGroupEndEnter() {
  if (!prof::loaded()) return;
  // ncclGroupEndInternal: state 24 once the profiler's depth is back at 0.
  if (t_api.profiler_group_depth > 0) --t_api.profiler_group_depth;
  if (t_api.profiler_group_depth == 0 && t_api.phase == ApiPhase::kStopped) {
    t_api.phase = ApiPhase::kReset;
    prof::record(t_api.group_api, ab::kStateGroupEndApiStart, nullptr);
  }
}

std::vector<ProfPlan> profilerPlans(std::vector<OpDesc>& descs) {
  std::vector<ProfPlan> plans;
  if (!prof::loaded()) return plans;
  // doLaunches: one plan per communicator, in the order the group met them.
  std::vector<Comm*> comms;
  for (OpDesc& d : descs) {
    if (d.prof == nullptr) continue;
    for (ProfTask& t : d.prof->tasks) t.owner = &d;
    if (std::find(comms.begin(), comms.end(), d.comm) == comms.end()) comms.push_back(d.comm);
  }
  for (Comm* c : comms) {
    if (!live(c)) continue;
    ProfPlan plan;
    plan.comm = c;
    std::vector<CUstream> streams;
    for (OpDesc& d : descs) {
      if (d.comm != c) continue;
      if (std::find(streams.begin(), streams.end(), d.stream) == streams.end()) {
        streams.push_back(d.stream);
      }
      if (d.prof == nullptr) continue;
      for (ProfTask& t : d.prof->tasks) (t.p2p ? plan.p2ps : plan.colls).push_back(&t);
    }
    // ncclLaunchKernel launches on planner->streams->stream: the newest stream the group met.
    plan.launch_stream = streams.back();
    orderCollTasks(c->nranks, &plan.colls);
    orderP2pTasks(c->rank, c->nranks, &plan.p2ps);
    for (auto* list : {&plan.colls, &plan.p2ps}) {
      for (const ProfTask* t : *list) {
        if (plan.mask == 0 && t->mask != 0) {
          plan.mask = t->mask;
          plan.group_api = t->group_api;
        }
      }
    }
    plans.push_back(std::move(plan));
  }
  return plans;
}

// ncclProfilerStartKernelLaunchEvent / ncclProfilerStopKernelLaunchEvent (src/plugin/profiler.cc).
void profilerKernelLaunch(const ProfPlan& plan) {
  void* launch = nullptr;
  if ((plan.mask & ab::kEvKernelLaunch) != 0) {
    ab::Descr5 e{};
    e.type = ab::kEvKernelLaunch;
    e.parentObj = plan.group_api;
    e.kernelLaunch.stream = plan.launch_stream;
    prof::start(contextOf(plan.comm), &launch, &e);
  }
  prof::stop(launch);
}

// ncclProfilerStartGroupEvent and ncclProfilerStartTaskEvents (src/plugin/profiler.cc).
// A plan task run by a host function may come after ncclCommAbort finalized the communicator:
// then it emits nothing, as no event follows finalize.
void profilerPlanStart(ProfPlan* plan) {
  Comm* c = plan->comm;
  void* ctx = contextOf(c);
  plan->group = nullptr;
  if (!live(c)) return;
  if ((plan->mask & kGroupMask) != 0) {
    ab::Descr5 e{};
    e.type = ab::kEvGroup;
    prof::start(ctx, &plan->group, &e);
  }
  ProfilerComm* pc = c->profiler;
  const auto channels = static_cast<uint8_t>(prof::channels());
  for (ProfTask* t : plan->colls) {
    const OpDesc* d = t->owner;
    // comm->seqNumber counts every collective launched, profiled or not (RAS reads it too).
    const uint64_t seq = pc->coll_seq[static_cast<int>(d->kind)].fetch_add(1);
    if ((t->mask & kCollMask) == 0) continue;
    ab::Descr5 e{};
    e.type = ab::kEvColl;
    e.parentObj = t->api;
    e.rank = c->rank;
    e.coll = {seq,      funcName(d->kind),   d->send,  d->recv, t->count,
              d->root,  dtypeName(t->dtype), channels, 1,       "RING",
              "SIMPLE", plan->group};
    prof::start(ctx, &t->event, &e);
  }
  for (ProfTask* t : plan->p2ps) {
    if ((t->mask & kP2pMask) == 0 || t->dropped) continue;
    ab::Descr5 e{};
    e.type = ab::kEvP2p;
    e.parentObj = t->api;
    e.rank = c->rank;
    e.p2p = {t->send ? "Send" : "Recv",
             const_cast<void*>(t->buff),
             dtypeName(t->dtype),
             t->count,
             t->peer,
             channels,
             plan->group};
    prof::start(ctx, &t->event, &e);
  }
}

// ncclProfilerStopTaskEvents and ncclProfilerStopGroupEvent (src/plugin/profiler.cc).
void profilerPlanStop(ProfPlan* plan) {
  if (!live(plan->comm)) return;
  for (const ProfTask* t : plan->colls) prof::stop(t->event);
  for (const ProfTask* t : plan->p2ps) prof::stop(t->event);
  prof::stop(plan->group);
}

// One plan after the other, each as ncclLaunchKernel then, on this thread,
// ncclLaunchKernelAfter_NoCuda -> hostStreamPlanTask (src/enqueue.cc, src/group.cc doLaunches).
void profilerLaunch(std::vector<OpDesc>& descs) {
  for (ProfPlan& plan : profilerPlans(descs)) {
    profilerKernelLaunch(plan);
    profilerPlanStart(&plan);
    profilerPlanStop(&plan);
  }
}

void profilerGroupEndExit() {
  // ncclProfilerStopGroupApiEvent, at the exit of every ncclGroupEndInternal.
  if (!prof::loaded() || t_api.group_api == nullptr || t_api.profiler_group_depth != 0) return;
  prof::stop(t_api.group_api);
  t_api.group_api = nullptr;
}

}  // namespace ncclsim
