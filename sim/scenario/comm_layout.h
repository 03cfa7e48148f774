// Who is in which communicator for a given job size: the splits of a scenario evaluated the way
// ncclCommSplit groups ranks (same color together, ordered by key, ties by parent rank).
#pragma once

#include <string>
#include <vector>

#include "sim/scenario/scenario.h"

namespace ncclscope::sim {

// One communicator across the whole job. Immutable after construction; thread-safe to read.
struct CommLayout {
  std::string name;
  int parent = -1;                       // index into JobLayout::comms(), -1 for world
  std::vector<int> color;                // per world rank: color passed to ncclCommSplit
  std::vector<int> key;                  // per world rank: key passed to ncclCommSplit
  std::vector<int> rank;                 // per world rank: its rank inside its group
  std::vector<std::vector<int>> groups;  // each group's world ranks in comm-rank order
  std::vector<int> group_of;             // per world rank: index into groups

  const std::vector<int>& membersOf(int world_rank) const {
    return groups[static_cast<size_t>(group_of[static_cast<size_t>(world_rank)])];
  }
  int sizeFor(int world_rank) const { return static_cast<int>(membersOf(world_rank).size()); }
};

// All communicators of a scenario for `nranks` ranks; comms()[0] is world, then the scenario's
// splits in order. Immutable after construction.
class JobLayout {
 public:
  JobLayout(const Scenario& s, int nranks);
  int nranks() const { return nranks_; }
  const std::vector<CommLayout>& comms() const { return comms_; }
  int indexOf(const std::string& name) const;  // -1 when unknown
  const CommLayout& comm(const std::string& name) const;

 private:
  int nranks_;
  std::vector<CommLayout> comms_;
};

// A rank as written in a scenario (negative counts from the end) for a job of nranks; -1 when it
// does not exist in that job.
int resolveRank(int written, int nranks);

// Everything that depends on the job size: min_ranks, fault and per-rank ranks exist, roots fit
// their communicator. Throws ScenarioError naming the JSON path.
void checkScenarioForRanks(const Scenario& s, int nranks);

}  // namespace ncclscope::sim
