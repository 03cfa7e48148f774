// Checks that need the whole file: names used before they are defined, faults pointing at steps
// or ops that do not exist, and faults that make no sense for the op they address.
#include <fmt/format.h>

#include <set>

#include "sim/scenario/names.h"
#include "sim/scenario/scenario_parser.h"

namespace ncclscope::sim {
namespace {

class Checker {
 public:
  explicit Checker(const Scenario& s) : s_(s) {
    known_.insert("world");
    for (const CommSpec& c : s.comms) known_.insert(c.name);
  }

  void fail(const std::string& path, const std::string& msg) const {
    throw ScenarioError(s_.file, path, msg);
  }

  void checkComm(const std::string& name, const std::string& path) const {
    if (!known_.count(name)) {
      std::string list;
      for (const auto& k : known_) list += (list.empty() ? "" : ", ") + k;
      fail(path, fmt::format("unknown communicator '{}' (defined: {})", name, list));
    }
  }

  void checkFault(const FaultSpec& f, const std::string& path) const {
    if (f.kind == FaultKind::kNeverJoin) {
      checkComm(f.comm, path + ".comm");
      return;
    }
    // No step: the rank's whole life.
    if (f.kind == FaultKind::kIpcOpenFails || f.kind == FaultKind::kDeviceMemoryLimit) return;
    if (f.step >= s_.totalSteps()) {
      fail(path + ".step", fmt::format("step {} does not exist ({} steps x repeat {} = {})", f.step,
                                       s_.steps.size(), s_.repeat, s_.totalSteps()));
    }
    if (!f.op) return;
    const StepSpec& step = s_.stepAt(f.step);
    if (*f.op >= static_cast<int>(step.ops.size())) {
      fail(path + ".op",
           fmt::format("step {} has {} ops (indices from 0)", f.step, step.ops.size()));
    }
    const OpSpec& op = step.ops[static_cast<size_t>(*f.op)];
    if (op.kind == OpKind::kCoalesced) {
      checkFitsCoalesced(f, op, path);
    } else {
      checkFitsOp(f, op, opKindName(op.kind), path);
    }
  }

 private:
  // Faults that change a call's arguments or data change the group's first collective
  // (docs/scenarios.md); those of pipelines do not fit; the rest address the whole group.
  void checkFitsCoalesced(const FaultSpec& f, const OpSpec& op, const std::string& path) const {
    switch (f.kind) {
      case FaultKind::kWrongCount:
      case FaultKind::kWrongDtype:
      case FaultKind::kWrongOp:
      case FaultKind::kWrongRedop:
      case FaultKind::kWrongRoot:
      case FaultKind::kNanInput:
      case FaultKind::kFlipOutput:
        checkFitsOp(f, op.ops.front(),
                    fmt::format("{} (the coalesced op's first collective)",
                                opKindName(op.ops.front().kind)),
                    path);
        break;
      default:
        checkFitsOp(f, op, opKindName(op.kind), path);
        break;
    }
  }

  void checkFitsOp(const FaultSpec& f, const OpSpec& op, const std::string_view name,
                   const std::string& path) const {
    switch (f.kind) {
      case FaultKind::kExtraOp:
        if (f.extra) checkComm(f.extra->comm, path + ".extra.comm");
        break;
      case FaultKind::kWrongCount:
        if (f.count && *f.count == op.count) fail(path + ".count", "equals the op's count");
        break;
      case FaultKind::kWrongDtype:
        if (f.dtype && *f.dtype == op.dtype) fail(path + ".dtype", "equals the op's dtype");
        break;
      case FaultKind::kWrongOp:
        if (opIsPointToPoint(op.kind)) {
          fail(path + ".op",
               fmt::format("wrong_op applies to collectives, {} is sends and receives", name));
        }
        if (f.as_op && (*f.as_op == op.kind || !opIsCollective(*f.as_op))) {
          fail(path + ".as_op", "must name a different collective");
        }
        break;
      case FaultKind::kWrongRedop:
        if (!opReduces(op.kind)) fail(path + ".op", fmt::format("{} does not reduce", name));
        if (f.redop && *f.redop == op.redop) fail(path + ".redop", "equals the op's redop");
        break;
      case FaultKind::kWrongRoot:
        if (!opHasRoot(op.kind)) fail(path + ".op", fmt::format("{} has no root", name));
        if (f.root && *f.root == op.root) fail(path + ".root", "equals the op's root");
        break;
      case FaultKind::kWrongPeer:
        if (op.kind != OpKind::kPipeline) {
          fail(path + ".op", fmt::format("wrong_peer applies to pipeline ops, this is {}", name));
        }
        break;
      case FaultKind::kSendFirst:
        if (op.kind != OpKind::kPipeline || op.grouped) {
          fail(path + ".op",
               fmt::format("send_first applies to ungrouped pipeline ops, this is {}{}", name,
                           op.kind == OpKind::kPipeline ? " (grouped)" : ""));
        }
        break;
      case FaultKind::kNanInput:
        if (opIsPointToPoint(op.kind)) {
          fail(path + ".op",
               fmt::format("nan_input applies to collectives, {} is sends and receives", name));
        }
        if (!dtypeIsFloat(op.dtype)) {
          fail(path + ".op",
               fmt::format("nan_input needs a floating-point dtype, this {} is {} (no NaN or Inf)",
                           name, dtypeName(op.dtype)));
        }
        if (f.index >= op.count) {
          fail(path + ".index",
               fmt::format("the op's input has {} elements (indices from 0)", op.count));
        }
        break;
      case FaultKind::kFlipOutput: {
        if (opIsPointToPoint(op.kind)) {
          fail(path + ".op",
               fmt::format("flip_output applies to collectives, {} is sends and receives", name));
        }
        // The smallest output any collective of `count` elements leaves on a rank.
        const uint64_t bits = uint64_t{op.count} * dtypeSize(op.dtype) * 8;
        if (f.bit >= bits) {
          fail(path + ".bit", fmt::format("the op's output holds {} bits ({} x {})", bits, op.count,
                                          dtypeName(op.dtype)));
        }
        break;
      }
      default:
        break;
    }
  }

  const Scenario& s_;
  std::set<std::string> known_;
};

}  // namespace

void checkReferences(const Scenario& s) {
  const Checker check(s);
  for (size_t i = 0; i < s.steps.size(); ++i) {
    for (size_t j = 0; j < s.steps[i].ops.size(); ++j) {
      check.checkComm(s.steps[i].ops[j].comm, fmt::format("steps[{}].ops[{}].comm", i, j));
    }
  }
  for (size_t i = 0; i < s.faults.size(); ++i)
    check.checkFault(s.faults[i], fmt::format("faults[{}]", i));
}

}  // namespace ncclscope::sim
