#include "sim/emulator/group.h"

#include <memory>
#include <utility>
#include <vector>

#include "sim/emulator/launch.h"
#include "sim/emulator/launch_host_func.h"
#include "sim/emulator/link_model.h"
#include "sim/emulator/profiler.h"
#include "sim/emulator/profiler_task_order.h"

namespace ncclsim {

namespace {

thread_local int t_depth = 0;
thread_local std::vector<OpDesc> t_ops;
thread_local std::vector<Comm*> t_joins;

// The profiler's launch events come first, so neither the proxy thread nor a stream worker
// reports proxy or device progress of a task whose Coll or P2p event is not out yet (NCCL's proxy
// learns of a task only in hostStreamPlanTask, between those starts and stops). Each OpRun hands
// its proxy work to the proxy thread as it is made, before its stream can reach it.
void launchNow(std::vector<OpDesc>& descs) {
  if (launchBlocking()) {
    launchThroughHostStream(std::move(descs));
    return;
  }
  profilerLaunch(descs);
  std::vector<std::unique_ptr<OpRun>> ops;
  std::vector<CUstream> streams;
  // Each takes its ring tickets as it is made: in the order the group's work runs.
  for (const size_t i : groupRunOrder(descs)) ops.push_back(std::make_unique<OpRun>(descs[i]));
  for (const OpDesc& d : descs) streams.push_back(d.stream);
  launchOps(std::move(ops), streams);
}

}  // namespace

void groupStart() {
  ++t_depth;
}

bool groupActive() {
  return t_depth > 0;
}

ncclResult_t groupEnd() {
  if (t_depth == 0) return ncclInvalidUsage;
  profilerGroupEndEnter();
  if (--t_depth == 0) {
    std::vector<Comm*> joins;
    joins.swap(t_joins);
    for (Comm* c : joins) commFinishJoin(c);
    std::vector<OpDesc> descs;
    descs.swap(t_ops);
    launchNow(descs);
  }
  profilerGroupEndExit();
  return ncclSuccess;
}

ncclResult_t groupSimulateEnd(float* estimated_us) {
  if (t_depth == 0) return ncclInvalidUsage;
  profilerGroupEndEnter();
  const bool outermost = --t_depth == 0;
  profilerGroupEndExit();
  if (!outermost) return ncclSuccess;
  LinkTiming t = currentLinkTiming();
  double ns = 0;
  for (const OpDesc& d : t_ops) {
    double bytes = double(d.count * dtypeSize(d.dtype));
    ns += double(t.arrival(0, bytes, 1.0));
  }
  t_ops.clear();
  t_joins.clear();
  if (estimated_us != nullptr) *estimated_us = float(ns / 1000.0);
  return ncclSuccess;
}

void submitOp(OpDesc desc) {
  profilerEnqueueEnter();
  groupStart();
  profilerTaskAppend(&desc, t_depth);
  t_ops.push_back(std::move(desc));
  groupEnd();
}

void groupDeferJoin(Comm* comm) {
  t_joins.push_back(comm);
}

}  // namespace ncclsim
