#include "sim/scenario/rank_runner.h"

#include <fmt/format.h>

#include <iostream>
#include <limits>
#include <optional>

#include "sim/scenario/comm_layout.h"
#include "sim/scenario/fault_actions.h"
#include "sim/scenario/issue_op.h"
#include "sim/scenario/live_backend.h"
#include "sim/scenario/names.h"
#include "sim/scenario/numerics_faults.h"
#include "sim/scenario/nvtx_range.h"
#include "sim/scenario/plan_backend.h"
#include "sim/scenario/rank_comms.h"
#include "sim/scenario/rank_exit_codes.h"
#include "sim/scenario/rank_faults.h"
#include "sim/scenario/scenario_parser.h"

namespace ncclscope::sim {
namespace {

// One issued op awaiting its check after the step's synchronization.
struct Pending {
  OpCall call;
  PatternKey key;
  OpBuffers buffers;
  bool check = false;
  bool nan_possible = false;            // an injected NaN/Inf may reach the output (nan_input)
  std::optional<uint64_t> flipped_bit;  // the emulated NCCL inverts this output bit (flip_output)
};

// " collective M" for a coalesced op's collective M (its index in the group), else "".
std::string partOf(const PatternKey& key) {
  return key.part >= 0 ? fmt::format(" collective {}", key.part) : "";
}

class Runner {
 public:
  Runner(const Scenario& s, const RankOptions& opt, RankBackend& backend)
      : s_(s),
        opt_(opt),
        b_(backend),
        job_(s, opt.nranks),
        faults_(s, opt.rank, opt.nranks),
        flips_(s, opt.rank, opt.nranks) {}

  int run() {
    std::string error;
    if (!b_.setupDevice(opt_.local_rank, error)) return fail(kRankLibraryError, error);
    if (faults_.ipcOpenFails()) {
      logLine("injecting ipc_open_fails: this rank's cuIpcOpenMemHandle fails");
      b_.setIpcOpenFails();
    }
    if (const size_t bytes = faults_.deviceMemoryLimit(); bytes != 0) {
      logLine(fmt::format("injecting device_memory_limit: this rank's GPU holds {} bytes", bytes));
      b_.setDeviceMemoryLimit(bytes);
    }
    if (const int rc = createComms(b_, opt_, job_, faults_, comms_, error); rc != kRankOk) {
      return fail(rc, error);
    }
    for (int g = 0; g < s_.totalSteps(); ++g) {
      if (const int rc = runStep(g); rc != kRankOk) return rc;
    }
    b_.position(-1, -1);
    if (!destroyComms(b_, comms_, error)) return fail(kRankLibraryError, error);
    return kRankOk;
  }

 private:
  int fail(int code, const std::string& what) const {
    logLine(fmt::format("rank {}: {}", opt_.rank, what));
    return code;
  }

  void processFaults(int g, std::optional<int> op) const {
    for (const FaultSpec* f : faults_.processFaults(g, op)) {
      const std::string what = describeFault(*f);
      if (f->kind == FaultKind::kCrash)
        b_.crash(f->crash_mode, what + " (" + std::string(crashModeName(f->crash_mode)) + ")");
      if (f->kind == FaultKind::kFreeze) b_.freeze(what);
      if (f->kind == FaultKind::kEarlyExit) b_.exitEarly(what);
    }
  }

  void setLink(int g) {
    if (!link_hung_ && faults_.linkHung(g)) {
      logLine(fmt::format("injecting hung_link at step {}: nothing this rank sends arrives", g));
      b_.setLinkHung();
      link_hung_ = true;
    }
    const double factor = faults_.linkFactor(g);
    if (factor == link_factor_) return;
    logLine(fmt::format("slow_link: link slowdown x{} from step {}", factor, g));
    b_.setLinkSlowdown(factor);
    link_factor_ = factor;
  }

  int runStep(int g) {
    const StepSpec& step = s_.stepAt(g);
    const NvtxRange step_range(fmt::format("step {}", g));
    // The step's name (forward, backward, optimizer) is its phase, as a training loop nests its
    // ranges; compute and collectives are inside it. A verdict then says "step 3, backward".
    std::optional<NvtxRange> named;
    if (!step.name.empty()) named.emplace(step.name);
    b_.position(g, -1);
    setLink(g);
    processFaults(g, std::nullopt);
    const double ms = faults_.computeMs(step.compute ? *step.compute : s_.compute, g);
    {
      const NvtxRange phase("compute");
      if (ms > 0) b_.computeMs(ms);
    }
    // The rest of the step (issue, synchronize, check) is its communication phase.
    const NvtxRange phase("collectives");
    // Buffers live on the heap inside Pending, so growing the vector never moves enqueued data.
    std::vector<Pending> pending;
    for (size_t k = 0; k < step.ops.size(); ++k) {
      if (const int rc = runOp(g, static_cast<int>(k), step.ops[k], pending); rc != kRankOk)
        return rc;
    }
    for (size_t i = 0; i < comms_.streams.size(); ++i) {
      const CUresult rc = b_.streamSynchronize(comms_.streams[i]);
      if (rc != CUDA_SUCCESS) {
        return fail(kRankLibraryError,
                    fmt::format("cuStreamSynchronize of '{}' at step {}: error {}",
                                job_.comms()[i].name, g, static_cast<int>(rc)));
      }
    }
    // A communicator aborted under the rank (NCCLSCOPE_ON_HANG=abort, say) abandons its work:
    // report that, as a training job's error handling would, rather than the garbage it left.
    for (size_t i = 0; i < comms_.comms.size(); ++i) {
      if (comms_.comms[i] == nullptr) continue;  // a never_join fault left it uncreated
      ncclResult_t async = ncclSuccess;
      const ncclResult_t rc = b_.commGetAsyncError(comms_.comms[i], &async);
      if (rc != ncclSuccess || (async != ncclSuccess && async != ncclInProgress)) {
        return fail(
            kRankLibraryError,
            fmt::format("communicator '{}' failed at step {} (aborted?): {}", job_.comms()[i].name,
                        g, ncclGetErrorString(rc != ncclSuccess ? rc : async)));
      }
    }
    return b_.movesData() ? checkStep(g, pending) : kRankOk;
  }

  // nan_input's spread: a NaN reaching this rank makes every later input of it NaN, as a NaN
  // gradient or activation does in training (sticky: nothing washes it out). The next collective
  // already computes on the NaN, as it would on the GPU, so from the fault's op on the rank waits
  // for each collective and looks at its output before issuing the next.
  int catchPoison(const Pending& p, int me, CUstream stream) {
    if (poisoned_ || !b_.movesData() || opIsPointToPoint(p.call.kind) ||
        !nanSpreadsAt(s_, p.key.step, p.key.op)) {
      return kRankOk;
    }
    if (b_.streamSynchronize(stream) != CUDA_SUCCESS) {
      return fail(kRankLibraryError, fmt::format("cuStreamSynchronize after step {} op {} failed",
                                                 p.key.step, p.key.op));
    }
    if (outputHasNonFinite(p.call, me, p.buffers)) {
      poisoned_ = true;
      logLine(
          fmt::format("nan_input spread: output of step {} op {}{} holds NaN/Inf; this rank's "
                      "later collectives get NaN in input element 0",
                      p.key.step, p.key.op, partOf(p.key)));
    }
    return kRankOk;
  }

  int runOp(int g, int k, const OpSpec& spec, std::vector<Pending>& pending) {
    b_.position(g, k);
    processFaults(g, k);
    const int comm = job_.indexOf(spec.comm);
    const CommLayout& layout = job_.comms()[static_cast<size_t>(comm)];
    const int me = layout.rank[static_cast<size_t>(opt_.rank)];
    const int n = layout.sizeFor(opt_.rank);
    Unit unit = unitFromSpec(spec, comm);
    bool skip = false;
    const FaultSpec* nan = nullptr;
    std::optional<Unit> extra;
    for (const FaultSpec* f : faults_.opFaults(g, k)) {
      const std::string what =
          fmt::format("{} on '{}' {}", describeFault(*f), spec.comm, opKindName(spec.kind));
      switch (f->kind) {
        case FaultKind::kStuckBefore:
          b_.blockForever(what);
          break;  // [[noreturn]] on a virtual call does not silence -Wimplicit-fallthrough
        case FaultKind::kHang:
          // Before a coalesced op's ncclGroupStart: none of the group's kernels starts.
          if (b_.blockStream(comms_.streams[static_cast<size_t>(comm)], what) != CUDA_SUCCESS) {
            return fail(kRankLibraryError, "cuLaunchHostFunc failed");
          }
          break;
        case FaultKind::kSkip:
          skip = true;
          logLine("injecting " + what + ": not issued");
          break;
        case FaultKind::kExtraOp:
          extra = f->extra ? unitFromSpec(*f->extra, job_.indexOf(f->extra->comm)) : unit;
          logLine("injecting " + what + ": one more op after it");
          break;
        case FaultKind::kNanInput:
          nan = f;
          logLine(
              fmt::format("injecting {}: {} at input element {}", what, f->nan_value, f->index));
          break;
        case FaultKind::kFlipOutput:
          break;  // flips_ decides, for this op and the later ones `every` names
        default:
          // A coalesced op's first collective (docs/scenarios.md, faults on a coalesced op).
          applyWrong(*f, n, unit.calls.front());
          logLine("injecting " + what);
          break;
      }
    }
    const bool check = !groupDesynced(s_, job_, comm, opt_.rank, g, k);
    if (!skip) {
      const int rc = issueUnit(unit, {s_.seed, comm, g, k}, me, n, check, pending, nan, true);
      if (rc != kRankOk) return rc;
    }
    if (extra) {
      const int ec = extra->calls.front().comm;
      const CommLayout& el = job_.comms()[static_cast<size_t>(ec)];
      const PatternKey key{s_.seed, ec, g, k + 1000000};  // apart from real ops' data
      return issueUnit(*extra, key, el.rank[static_cast<size_t>(opt_.rank)], el.sizeFor(opt_.rank),
                       false, pending, nullptr, false);
    }
    return kRankOk;
  }

  // What one scenario op issues: one call, or a coalesced op's collectives in one group.
  struct Unit {
    std::vector<OpCall> calls;
    bool coalesced = false;
  };

  static Unit unitFromSpec(const OpSpec& spec, int comm) {
    Unit u;
    u.coalesced = spec.kind == OpKind::kCoalesced;
    if (!u.coalesced) {
      u.calls.push_back(callFromSpec(spec, comm));
      return u;
    }
    for (const OpSpec& inner : spec.ops) u.calls.push_back(callFromSpec(inner, comm));
    return u;
  }

  // A coalesced op as ProcessGroupNCCL issues one (torch/csrc/distributed/c10d/
  // ProcessGroupNCCL.cpp, startCoalescing / endCoalescing): ncclGroupStart, each collective with
  // its own buffers and data (PatternKey::part), ncclGroupEnd. NCCL then runs them in its plan's
  // order, not the call order (src/enqueue.cc ncclPrepareTasks). A nan_input goes into the first.
  int issueUnit(const Unit& u, PatternKey key, int me, int n, bool check,
                std::vector<Pending>& pending, const FaultSpec* nan, bool scenario_op) {
    if (!u.coalesced) return issue(u.calls.front(), key, me, n, check, pending, nan, scenario_op);
    const std::string where =
        fmt::format("coalesced op on '{}' at step {} op {}",
                    job_.comms()[static_cast<size_t>(key.comm)].name, key.step, key.op);
    if (const ncclResult_t rc = b_.groupStart(); rc != ncclSuccess) {
      return fail(kRankLibraryError,
                  fmt::format("ncclGroupStart of the {}: {}", where, ncclGetErrorString(rc)));
    }
    const size_t first = pending.size();
    for (size_t m = 0; m < u.calls.size(); ++m) {
      key.part = static_cast<int>(m);
      const int rc = issue(u.calls[m], key, me, n, check, pending, m == 0 ? nan : nullptr,
                           scenario_op, /*in_group=*/true);
      if (rc != kRankOk) return rc;  // the rank ends: its open group goes with it
    }
    if (const ncclResult_t rc = b_.groupEnd(); rc != ncclSuccess) {
      return fail(kRankLibraryError,
                  fmt::format("ncclGroupEnd of the {}: {}", where, ncclGetErrorString(rc)));
    }
    // The group launches at ncclGroupEnd: only now can a spreading NaN be looked for in its
    // outputs (catchPoison waits for each).
    const CUstream stream = comms_.streams[static_cast<size_t>(key.comm)];
    for (size_t i = first; i < pending.size(); ++i) {
      if (const int rc = catchPoison(pending[i], me, stream); rc != kRankOk) return rc;
    }
    return kRankOk;
  }

  static void applyWrong(const FaultSpec& f, int n, OpCall& c) {
    switch (f.kind) {
      case FaultKind::kWrongCount:
        c.count = f.count.value_or(c.count == 0 ? 1 : c.count * 2);
        break;
      case FaultKind::kWrongDtype:
        c.dtype = f.dtype.value_or(c.dtype == ncclFloat32 ? ncclFloat16 : ncclFloat32);
        break;
      case FaultKind::kWrongOp:
        c.kind = f.as_op.value_or(c.kind == OpKind::kAllReduce ? OpKind::kAllGather
                                                               : OpKind::kAllReduce);
        break;
      case FaultKind::kWrongRedop:
        c.redop = f.redop.value_or(c.redop == RedOp::kSum ? RedOp::kMax : RedOp::kSum);
        break;
      case FaultKind::kWrongRoot:
        c.root = f.root.value_or((c.root + 1) % n);
        break;
      case FaultKind::kWrongPeer:
        c.peer_shift = f.peer_shift;
        break;
      case FaultKind::kSendFirst:
        c.send_first = true;
        break;
      default:
        break;
    }
  }

  // `nan`: a nan_input fault on this op; `scenario_op`: an op of the scenario (not extra_op's);
  // `in_group`: inside a coalesced op's group, where nothing runs before ncclGroupEnd.
  int issue(const OpCall& call, const PatternKey& key, int me, int n, bool check,
            std::vector<Pending>& pending, const FaultSpec* nan, bool scenario_op,
            bool in_group = false) {
    pending.push_back({call, key, prepareBuffers(call, key, me, n), check, false, std::nullopt});
    Pending& p = pending.back();
    const size_t c = static_cast<size_t>(call.comm);
    if (nan != nullptr && !writeInput(call, p.buffers, nan->index, nan->nan_value)) {
      logLine(
          fmt::format("nan_input at step {} op {}: {} holds no NaN or no element {}; nothing "
                      "written",
                      key.step, key.op, dtypeName(call.dtype), nan->index));
    }
    p.nan_possible = nanInputReaches(s_, key.step, key.op);
    if (!opIsPointToPoint(call.kind)) {
      if (poisoned_) writeInput(call, p.buffers, 0, std::numeric_limits<double>::quiet_NaN());
      if (scenario_op) armFlip(p, me);
    }
    std::string capture_error;
    if (call.captured && !b_.beginCapture(comms_.streams[c], capture_error)) {
      return fail(kRankLibraryError,
                  fmt::format("step {} op {}: {}", key.step, key.op, capture_error));
    }
    const ncclResult_t rc = issueOp(b_, call, p.buffers, comms_.comms[c], comms_.streams[c]);
    if (call.captured && !b_.endCapture(comms_.streams[c], capture_error)) {
      return fail(kRankLibraryError,
                  fmt::format("step {} op {}: {}", key.step, key.op, capture_error));
    }
    if (rc != ncclSuccess) {
      return fail(
          kRankLibraryError,
          fmt::format("{} on '{}' at step {} op {}{}: {}", opKindName(call.kind),
                      job_.comms()[c].name, key.step, key.op, partOf(key), ncclGetErrorString(rc)));
    }
    return in_group ? kRankOk : catchPoison(p, me, comms_.streams[c]);
  }

  // flip_output: the emulated NCCL inverts one bit of this collective's output on this rank.
  void armFlip(Pending& p, int me) {
    const std::optional<uint64_t> bit = flips_.next(p.key.step, p.key.op);
    if (!bit) return;
    const std::string where = fmt::format(
        "flip_output at step {} op {}{} on '{}' {}", p.key.step, p.key.op, partOf(p.key),
        job_.comms()[static_cast<size_t>(p.call.comm)].name, opKindName(p.call.kind));
    const uint64_t bits = outputBits(p.call, me, p.buffers);
    if (bits == 0) {
      logLine(where + ": this rank has no output there, nothing flipped");
      return;
    }
    p.flipped_bit = *bit % bits;
    logLine(fmt::format("injecting {}: bit {} of its output", where, *p.flipped_bit));
    b_.flipNextOutputBit(*p.flipped_bit);
  }

  // Outputs an injected fault changed are checked for exactly that change: a flipped bit is
  // flipped back first, and elements an injected NaN/Inf reached are counted, not compared.
  int checkStep(int g, const std::vector<Pending>& pending) const {
    for (const Pending& p : pending) {
      if (!p.check) continue;
      const CommLayout& layout = job_.comms()[static_cast<size_t>(p.call.comm)];
      std::optional<OpBuffers> unflipped;
      if (p.flipped_bit) {
        unflipped = p.buffers;
        flipOutputBit(p.call, *unflipped, *p.flipped_bit);
      }
      size_t non_finite = 0;
      const auto wrong = checkResult(p.call, p.key, layout.rank[static_cast<size_t>(opt_.rank)],
                                     layout.sizeFor(opt_.rank), unflipped ? *unflipped : p.buffers,
                                     p.nan_possible ? &non_finite : nullptr);
      if (wrong) {
        return fail(kRankWrongResult,
                    fmt::format("wrong result: step {} op {}{} ({} on '{}', {}) {}{}", g, p.key.op,
                                partOf(p.key), opKindName(p.call.kind), layout.name,
                                dtypeName(p.call.dtype), *wrong,
                                p.flipped_bit ? fmt::format(" (bit {} flipped back first: "
                                                            "flip_output)",
                                                            *p.flipped_bit)
                                              : ""));
      }
      if (non_finite != 0) {
        logLine(
            fmt::format("output of step {} op {}{} poisoned as injected ({} of {} elements "
                        "NaN/Inf)",
                        g, p.key.op, partOf(p.key), non_finite, p.buffers.recv_count));
      }
      if (p.flipped_bit) {
        logLine(fmt::format("output of step {} op {}{} corrupted as injected (bit {} flipped)", g,
                            p.key.op, partOf(p.key), *p.flipped_bit));
      }
    }
    return kRankOk;
  }

  const Scenario& s_;
  const RankOptions& opt_;
  RankBackend& b_;
  JobLayout job_;
  RankFaults faults_;
  OutputFlips flips_;
  RankComms comms_;
  double link_factor_ = 1.0;
  bool link_hung_ = false;
  bool poisoned_ = false;  // a spreading nan_input's NaN reached this rank
};

}  // namespace

int runRank(const RankOptions& opt) {
  Scenario s;
  try {
    s = parseScenarioFile(opt.scenario);
    checkScenarioForRanks(s, opt.nranks);
  } catch (const ScenarioError& e) {
    logLine(e.what());
    return kRankUsage;
  }
  if (!opt.plan) {
    LiveBackend live;
    return Runner(s, opt, live).run();
  }
  PlanBackend plan;
  std::string stopped;
  int rc = kRankOk;
  try {
    rc = Runner(s, opt, plan).run();
  } catch (const PlanStopped& e) {
    stopped = e.what();
  }
  plan.finish(std::cout, stopped);
  return rc;
}

}  // namespace ncclscope::sim
