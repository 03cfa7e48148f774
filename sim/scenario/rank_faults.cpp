#include "sim/scenario/rank_faults.h"

#include <fmt/format.h>

#include <algorithm>

#include "sim/scenario/names.h"

namespace ncclscope::sim {
namespace {

bool isOpFault(FaultKind k) {
  switch (k) {
    case FaultKind::kComputeSlowdown:
    case FaultKind::kSlowLink:
    case FaultKind::kHungLink:
    case FaultKind::kCrash:
    case FaultKind::kFreeze:
    case FaultKind::kEarlyExit:
    case FaultKind::kNeverJoin:
    case FaultKind::kIpcOpenFails:
    case FaultKind::kDeviceMemoryLimit:
      return false;
    default:
      return true;
  }
}

bool isProcessFault(FaultKind k) {
  return k == FaultKind::kCrash || k == FaultKind::kFreeze || k == FaultKind::kEarlyExit;
}

bool changesIssue(FaultKind k) {
  // send_first changes the order of a pair's calls, not what they carry; nan_input and
  // flip_output change data the self-check then expects (numerics_faults.h), not the calls.
  return isOpFault(k) && k != FaultKind::kHang && k != FaultKind::kStuckBefore &&
         k != FaultKind::kSendFirst && k != FaultKind::kNanInput && k != FaultKind::kFlipOutput;
}

bool activeAt(const FaultSpec& f, int step) {
  return step >= f.step && (f.until_step < 0 || step <= f.until_step);
}

bool hasRank(const FaultSpec& f, int world_rank, int nranks) {
  return std::any_of(f.ranks.begin(), f.ranks.end(),
                     [&](int w) { return resolveRank(w, nranks) == world_rank; });
}

// Uniform in [0, 1) from (seed, rank, step), so jitter is reproducible run to run.
double unitRandom(uint64_t seed, int rank, int step) {
  uint64_t x = seed * 0x9e3779b97f4a7c15ULL ^ (static_cast<uint64_t>(rank) << 32) ^
               static_cast<uint64_t>(step);
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdULL;
  x ^= x >> 33;
  x *= 0xc4ceb9fe1a85ec53ULL;
  x ^= x >> 33;
  return static_cast<double>(x >> 11) / static_cast<double>(1ULL << 53);
}

}  // namespace

RankFaults::RankFaults(const Scenario& s, int world_rank, int nranks)
    : s_(s), rank_(world_rank), nranks_(nranks) {}

bool RankFaults::mine(const FaultSpec& f) const {
  return hasRank(f, rank_, nranks_);
}

std::vector<const FaultSpec*> RankFaults::opFaults(int step, int op) const {
  std::vector<const FaultSpec*> out;
  for (const FaultSpec& f : s_.faults) {
    if (isOpFault(f.kind) && f.step == step && f.op == op && mine(f)) out.push_back(&f);
  }
  return out;
}

std::vector<const FaultSpec*> RankFaults::processFaults(int step, std::optional<int> op) const {
  std::vector<const FaultSpec*> out;
  for (const FaultSpec& f : s_.faults) {
    if (isProcessFault(f.kind) && f.step == step && f.op == op && mine(f)) out.push_back(&f);
  }
  return out;
}

bool RankFaults::neverJoins(const std::string& comm) const {
  return std::any_of(s_.faults.begin(), s_.faults.end(), [&](const FaultSpec& f) {
    return f.kind == FaultKind::kNeverJoin && f.join_after_ms < 0 && f.comm == comm && mine(f);
  });
}

double RankFaults::joinDelayMs(const std::string& comm) const {
  double ms = 0;
  for (const FaultSpec& f : s_.faults) {
    if (f.kind == FaultKind::kNeverJoin && f.comm == comm && mine(f)) {
      ms = std::max(ms, f.join_after_ms);
    }
  }
  return ms;
}

double RankFaults::computeMs(const ComputeSpec& base, int step) const {
  double ms = base.ms;
  for (const auto& [written, v] : base.per_rank) {
    if (resolveRank(written, nranks_) == rank_) ms = v;
  }
  ms += base.jitter_ms * unitRandom(s_.seed, rank_, step);
  for (const FaultSpec& f : s_.faults) {
    if (f.kind == FaultKind::kComputeSlowdown && activeAt(f, step) && mine(f)) {
      ms = ms * f.factor + f.extra_ms;
    }
  }
  return ms;
}

double RankFaults::linkFactor(int step) const {
  double factor = 1.0;
  for (const FaultSpec& f : s_.faults) {
    if (f.kind == FaultKind::kSlowLink && activeAt(f, step) && mine(f)) factor *= f.factor;
  }
  return factor;
}

bool RankFaults::linkHung(int step) const {
  return std::any_of(s_.faults.begin(), s_.faults.end(), [&](const FaultSpec& f) {
    return f.kind == FaultKind::kHungLink && step >= f.step && mine(f);
  });
}

bool RankFaults::ipcOpenFails() const {
  return std::any_of(s_.faults.begin(), s_.faults.end(), [&](const FaultSpec& f) {
    return f.kind == FaultKind::kIpcOpenFails && mine(f);
  });
}

size_t RankFaults::deviceMemoryLimit() const {
  size_t limit = 0;
  for (const FaultSpec& f : s_.faults) {
    if (f.kind == FaultKind::kDeviceMemoryLimit && mine(f) &&
        (limit == 0 || f.memory_bytes < limit)) {
      limit = f.memory_bytes;
    }
  }
  return limit;
}

bool groupDesynced(const Scenario& s, const JobLayout& job, int comm, int world_rank, int step,
                   int op) {
  const std::vector<int>& members = job.comms()[static_cast<size_t>(comm)].membersOf(world_rank);
  for (const FaultSpec& f : s.faults) {
    if (!changesIssue(f.kind) || !f.op) continue;
    if (std::make_pair(f.step, *f.op) > std::make_pair(step, op)) continue;
    // Only faults on an op of this communicator disturb its data.
    const OpSpec& target = s.stepAt(f.step).ops[static_cast<size_t>(*f.op)];
    if (job.indexOf(target.comm) != comm && !(f.extra && job.indexOf(f.extra->comm) == comm)) {
      continue;
    }
    for (int m : members) {
      if (hasRank(f, m, job.nranks())) return true;
    }
  }
  return false;
}

std::string describeFault(const FaultSpec& f) {
  if (f.kind == FaultKind::kNeverJoin && f.join_after_ms >= 0) {
    return fmt::format("never_join of '{}' after {} ms (joins late)", f.comm, f.join_after_ms);
  }
  if (f.kind == FaultKind::kNeverJoin) return fmt::format("never_join of '{}'", f.comm);
  if (f.kind == FaultKind::kIpcOpenFails) return "ipc_open_fails";
  if (f.kind == FaultKind::kDeviceMemoryLimit) {
    return fmt::format("device_memory_limit of {} bytes", f.memory_bytes);
  }
  std::string where = fmt::format("step {}", f.step);
  if (f.op) where += fmt::format(" op {}", *f.op);
  return fmt::format("{} at {}", faultKindName(f.kind), where);
}

}  // namespace ncclscope::sim
