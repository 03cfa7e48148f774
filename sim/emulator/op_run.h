// Executes one planned operation as a non-blocking state machine, so that the operations of a
// group progress together (a group of sends and receives never deadlocks on their order).
#pragma once

#include <cstdint>
#include <memory>

#include "sim/emulator/link_model.h"
#include "sim/emulator/op_desc.h"
#include "sim/emulator/op_plan.h"
#include "sim/emulator/profiler_proxy.h"

namespace ncclsim {

// One operation in flight. Created on the calling thread (which takes its ring tickets), then
// progressed by one stream worker only. Counts itself in comm->inflight until finished.
class OpRun {
 public:
  // With proxy_now false the proxy learns of the operation only at handOffProxyWork(), which
  // the launch then calls where NCCL uploads its proxy ops (hostStreamPlanTask), before the
  // operation's stream reaches it.
  explicit OpRun(const OpDesc& desc, bool proxy_now = true);
  ~OpRun();
  OpRun(const OpRun&) = delete;
  OpRun& operator=(const OpRun&) = delete;

  // Does whatever is possible without waiting. Returns true if anything moved. When blocked only
  // on modeled time, lowers *wake_ns to when that changes.
  bool progress(uint64_t now, uint64_t* wake_ns);
  bool finished() const { return finished_; }
  // Hands the proxy thread its part (ProxyOp appends, step posts). Once, by one thread.
  void handOffProxyWork();

 private:
  void start(uint64_t now);
  bool pushOut(OutFlow& f, uint64_t now);
  bool pullIn(InFlow& f, uint64_t now, uint64_t* wake_ns);
  bool foldExpects(int peer, const ChunkHeader& h) const;
  void foldApply(const char* src);
  void foldLocal();
  size_t foldChunkElems() const;
  void finish();

  OpDesc d_;
  OpPlan p_;
  LinkTiming timing_;
  bool started_ = false;
  bool finished_ = false;
  uint64_t start_ns_ = 0;
  uint64_t min_end_ns_ = 0;
  uint8_t scalar_[8] = {};
  std::unique_ptr<ProxyTracker> prof_;  // device and proxy profiler events; null when not asked
};

}  // namespace ncclsim
