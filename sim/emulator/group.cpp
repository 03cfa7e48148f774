#include "sim/emulator/group.h"

#include <memory>
#include <vector>

#include "sim/emulator/launch.h"
#include "sim/emulator/link_model.h"
#include "sim/emulator/profiler.h"

namespace ncclsim {

namespace {

thread_local int t_depth = 0;
thread_local std::vector<OpDesc> t_ops;
thread_local std::vector<Comm*> t_joins;

void launchNow(const std::vector<OpDesc>& descs) {
  std::vector<std::unique_ptr<OpRun>> ops;
  std::vector<CUstream> streams;
  for (OpDesc d : descs) {
    profilerCollEnqueued(&d);
    ops.push_back(std::make_unique<OpRun>(d));  // takes ring tickets in issue order
    streams.push_back(d.stream);
  }
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
  if (--t_depth > 0) return ncclSuccess;
  std::vector<Comm*> joins;
  joins.swap(t_joins);
  for (Comm* c : joins) commFinishJoin(c);
  std::vector<OpDesc> descs;
  descs.swap(t_ops);
  launchNow(descs);
  return ncclSuccess;
}

ncclResult_t groupSimulateEnd(float* estimated_us) {
  if (t_depth == 0) return ncclInvalidUsage;
  if (--t_depth > 0) return ncclSuccess;
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

void submitOp(const OpDesc& desc) {
  if (t_depth > 0) {
    t_ops.push_back(desc);
  } else {
    launchNow({desc});
  }
}

void groupDeferJoin(Comm* comm) {
  t_joins.push_back(comm);
}

}  // namespace ncclsim
