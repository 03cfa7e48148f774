#include "sim/scenario/comm_layout.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <stdexcept>

#include "sim/scenario/json_node.h"
#include "sim/scenario/names.h"

namespace ncclscope::sim {
namespace {

CommLayout worldLayout(int nranks) {
  CommLayout w;
  w.name = "world";
  w.groups.emplace_back();
  for (int r = 0; r < nranks; ++r) {
    w.color.push_back(0);
    w.key.push_back(r);
    w.rank.push_back(r);
    w.group_of.push_back(0);
    w.groups[0].push_back(r);
  }
  return w;
}

CommLayout splitLayout(const CommSpec& spec, int parent_index, const CommLayout& parent) {
  CommLayout c;
  c.name = spec.name;
  c.parent = parent_index;
  const size_t n = parent.rank.size();
  c.color.resize(n);
  c.key.resize(n);
  c.rank.resize(n);
  c.group_of.resize(n);
  // Groups are formed per parent group: the same color in two parent groups is two communicators.
  std::map<std::pair<int, int>, std::vector<std::pair<int, int>>> buckets;  // -> (key, world)
  for (size_t w = 0; w < n; ++w) {
    const int pr = parent.rank[w];
    const int psize = static_cast<int>(parent.membersOf(static_cast<int>(w)).size());
    c.color[w] = spec.by == SplitBy::kBlock ? pr / spec.group : pr % spec.group;
    c.key[w] = spec.key == SplitKey::kParentRank ? pr : psize - 1 - pr;
    buckets[{parent.group_of[w], c.color[w]}].push_back({c.key[w], static_cast<int>(w)});
  }
  for (auto& [unused, members] : buckets) {
    // Ties on key break by parent rank, which for one parent group is world-rank order too.
    std::sort(members.begin(), members.end());
    std::vector<int> group;
    for (const auto& [key, w] : members) {
      c.rank[static_cast<size_t>(w)] = static_cast<int>(group.size());
      c.group_of[static_cast<size_t>(w)] = static_cast<int>(c.groups.size());
      group.push_back(w);
    }
    c.groups.push_back(std::move(group));
  }
  return c;
}

}  // namespace

int resolveRank(int written, int nranks) {
  const int r = written < 0 ? nranks + written : written;
  return r >= 0 && r < nranks ? r : -1;
}

JobLayout::JobLayout(const Scenario& s, int nranks) : nranks_(nranks) {
  comms_.push_back(worldLayout(nranks));
  for (const CommSpec& spec : s.comms) {
    const int parent = indexOf(spec.parent);
    comms_.push_back(splitLayout(spec, parent, comms_[static_cast<size_t>(parent)]));
  }
}

int JobLayout::indexOf(const std::string& name) const {
  for (size_t i = 0; i < comms_.size(); ++i) {
    if (comms_[i].name == name) return static_cast<int>(i);
  }
  return -1;
}

const CommLayout& JobLayout::comm(const std::string& name) const {
  const int i = indexOf(name);
  if (i < 0) throw std::out_of_range("unknown communicator " + name);
  return comms_[static_cast<size_t>(i)];
}

namespace {

size_t smallestGroup(const CommLayout& c) {
  size_t m = SIZE_MAX;
  for (const auto& g : c.groups) m = std::min(m, g.size());
  return m;
}

void checkRoot(const Scenario& s, const JobLayout& job, const std::string& comm, int root,
               const std::string& path) {
  const CommLayout& c = job.comm(comm);
  if (static_cast<size_t>(root) >= smallestGroup(c)) {
    throw ScenarioError(s.file, path,
                        fmt::format("root {} does not exist in every '{}' group at {} ranks (the "
                                    "smallest has {} ranks)",
                                    root, comm, job.nranks(), smallestGroup(c)));
  }
}

void checkRank(const Scenario& s, int written, int nranks, const std::string& path) {
  if (resolveRank(written, nranks) < 0) {
    throw ScenarioError(s.file, path,
                        fmt::format("rank {} does not exist at {} ranks", written, nranks));
  }
}

void checkCompute(const Scenario& s, const ComputeSpec& c, int nranks, const std::string& path) {
  for (const auto& [rank, ms] : c.per_rank) {
    checkRank(s, rank, nranks, fmt::format("{}.per_rank.{}", path, rank));
  }
}

}  // namespace

void checkScenarioForRanks(const Scenario& s, int nranks) {
  if (nranks < s.min_ranks) {
    throw ScenarioError(
        s.file, "min_ranks",
        fmt::format("this scenario needs at least {} ranks, got {}", s.min_ranks, nranks));
  }
  const JobLayout job(s, nranks);
  checkCompute(s, s.compute, nranks, "compute");
  for (size_t i = 0; i < s.steps.size(); ++i) {
    const StepSpec& step = s.steps[i];
    if (step.compute) checkCompute(s, *step.compute, nranks, fmt::format("steps[{}].compute", i));
    for (size_t j = 0; j < step.ops.size(); ++j) {
      const OpSpec& op = step.ops[j];
      if (opHasRoot(op.kind)) {
        checkRoot(s, job, op.comm, op.root, fmt::format("steps[{}].ops[{}].root", i, j));
      }
      for (size_t m = 0; m < op.ops.size(); ++m) {  // a coalesced op's collectives
        if (opHasRoot(op.ops[m].kind)) {
          checkRoot(s, job, op.comm, op.ops[m].root,
                    fmt::format("steps[{}].ops[{}].ops[{}].root", i, j, m));
        }
      }
    }
  }
  for (size_t i = 0; i < s.faults.size(); ++i) {
    const FaultSpec& f = s.faults[i];
    for (size_t k = 0; k < f.ranks.size(); ++k) {
      checkRank(s, f.ranks[k], nranks, fmt::format("faults[{}].ranks[{}]", i, k));
    }
    if (f.kind == FaultKind::kWrongRoot && f.root) {
      const OpSpec& op = s.stepAt(f.step).ops[static_cast<size_t>(*f.op)];
      checkRoot(s, job, op.comm, *f.root, fmt::format("faults[{}].root", i));
    }
  }
}

}  // namespace ncclscope::sim
