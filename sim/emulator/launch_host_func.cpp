#include "sim/emulator/launch_host_func.h"

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <utility>

#include <cuda.h>

#include "sim/emulator/backoff_wait.h"
#include "sim/emulator/launch.h"
#include "sim/emulator/profiler.h"
#include "sim/emulator/profiler_task_order.h"
#include "sim/emulator/sim_stream.h"

namespace ncclsim {
namespace {

// One group launch, shared by its host functions, the launch stream's wait and the caller; the
// last of them frees it.
struct HostLaunch {
  std::vector<OpDesc> descs;  // the owners of the plans' tasks
  std::vector<ProfPlan> plans;
  std::vector<std::pair<Comm*, OpRun*>> runs;  // owned by their launch (launch.h), which runs
                                               // only after every host function returned
  std::atomic<int> pending{0};                 // host functions not yet returned
  std::atomic<int> refs{0};
};

struct HostCall {
  HostLaunch* launch;
  Comm* comm;
  ProfPlan* plan;  // null: no profiled task on this communicator
};

void release(HostLaunch* l) {
  if (l->refs.fetch_sub(1, std::memory_order_acq_rel) == 1) delete l;
}

// hostStreamPlanTask: Group and task starts, the proxy upload (uploadProxyOps), task stops,
// Group stop.
void planTask(HostLaunch* l, Comm* c, ProfPlan* plan) {
  if (plan != nullptr) profilerPlanStart(plan);
  for (auto& [comm, run] : l->runs) {
    if (comm == c) run->handOffProxyWork();
  }
  if (plan != nullptr) profilerPlanStop(plan);
}

// hostStreamPlanCallback, on the host stream's worker.
void hostStreamPlanCallback(void* arg) {
  auto* call = static_cast<HostCall*>(arg);
  HostLaunch* l = call->launch;
  planTask(l, call->comm, call->plan);
  delete call;
  l->pending.fetch_sub(1, std::memory_order_release);
  release(l);
}

// ncclStreamWaitStream(launchStream, hostStream): the kernel waits for the host functions.
void waitHostFunctions(void* arg) {
  auto* l = static_cast<HostLaunch*>(arg);
  Backoff backoff;
  while (l->pending.load(std::memory_order_acquire) != 0) backoff.pause();
  release(l);
}

// finishPlan's plan->hasProxyOps: every transfer to another rank goes through the network proxy
// here (every rank is a node of its own); a rank's transfers to itself have none, and a
// collective of one rank is a copy.
bool hasProxyOps(const OpDesc& d) {
  if (d.comm->nranks == 1) return false;
  const bool p2p = d.kind == OpKind::kSend || d.kind == OpKind::kRecv;
  return !p2p || d.root != d.comm->rank;
}

// comm->sharedRes->hostStream, made at its first use.
CUstream hostStreamOf(Comm* c) {
  std::lock_guard<std::mutex> lock(c->issue_mu);
  if (c->host_stream == nullptr) cuStreamCreate(&c->host_stream, 0);
  return c->host_stream;
}

}  // namespace

bool launchBlocking() {
  static const bool blocking = [] {
    const char* v = std::getenv("CUDA_LAUNCH_BLOCKING");
    return v != nullptr && v[0] != 0 && !(v[0] == '0' && v[1] == 0);
  }();
  return blocking;
}

void launchThroughHostStream(std::vector<OpDesc> descs) {
  if (descs.empty()) return;
  auto* l = new HostLaunch;
  l->descs = std::move(descs);
  l->plans = profilerPlans(l->descs);
  std::vector<std::unique_ptr<OpRun>> ops;
  std::vector<CUstream> streams;
  std::vector<Comm*> comms;     // in the group's order
  std::vector<Comm*> via_host;  // those whose plan has proxy ops
  for (const size_t i : groupRunOrder(l->descs)) {
    const OpDesc& d = l->descs[i];
    ops.push_back(std::make_unique<OpRun>(d, false));  // takes ring tickets in run order
    l->runs.emplace_back(d.comm, ops.back().get());
  }
  for (const OpDesc& d : l->descs) {
    streams.push_back(d.stream);
    if (std::find(comms.begin(), comms.end(), d.comm) == comms.end()) comms.push_back(d.comm);
    if (hasProxyOps(d) && std::find(via_host.begin(), via_host.end(), d.comm) == via_host.end()) {
      via_host.push_back(d.comm);
    }
  }
  auto planOf = [l](Comm* c) -> ProfPlan* {
    for (ProfPlan& p : l->plans) {
      if (p.comm == c) return &p;
    }
    return nullptr;
  };
  const int calls = int(via_host.size());
  l->pending.store(calls, std::memory_order_relaxed);
  l->refs.store(calls + (calls > 0 ? 1 : 0) + 1, std::memory_order_relaxed);
  // ncclLaunchPrepare, per communicator: the host functions first, then the launch stream's wait.
  for (Comm* c : via_host) {
    cuLaunchHostFunc(hostStreamOf(c), hostStreamPlanCallback, new HostCall{l, c, planOf(c)});
  }
  // launchOps runs the group on the first operation's stream.
  if (calls > 0) ncclsimStreamEnqueue(l->descs[0].stream, waitHostFunctions, l);
  // doLaunches: ncclLaunchKernel per plan; a plan without proxy ops runs its plan task here
  // (ncclLaunchKernelAfter_NoCuda), before its stream can reach the operations.
  for (Comm* c : comms) {
    ProfPlan* plan = planOf(c);
    if (plan != nullptr) profilerKernelLaunch(*plan);
    if (std::find(via_host.begin(), via_host.end(), c) == via_host.end()) planTask(l, c, plan);
  }
  launchOps(std::move(ops), streams);
  release(l);
}

}  // namespace ncclsim
