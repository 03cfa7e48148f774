// The faults of a scenario as one rank sees them: which apply to this rank at a given step and op,
// and the effective compute time and link slowdown of a step.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "sim/scenario/comm_layout.h"
#include "sim/scenario/scenario.h"

namespace ncclscope::sim {

// Immutable after construction; borrows the scenario (must outlive it).
class RankFaults {
 public:
  RankFaults(const Scenario& s, int world_rank, int nranks);

  // Per-op faults (hang .. wrong_peer) of this rank at global step/op, in file order.
  std::vector<const FaultSpec*> opFaults(int step, int op) const;
  // crash/freeze/early_exit due at this point: op nullopt = start of the step, before compute.
  std::vector<const FaultSpec*> processFaults(int step, std::optional<int> op) const;
  bool neverJoins(const std::string& comm) const;
  // How late this rank calls the creation of comm (a never_join with after_ms); 0: on time.
  double joinDelayMs(const std::string& comm) const;

  // Compute time of a step in ms: base (its per-rank override), jitter from the seed, slowdowns.
  double computeMs(const ComputeSpec& base, int step) const;
  // Link slowdown in force during a step (1.0 = none); faults active together multiply.
  double linkFactor(int step) const;
  // Whether this rank's links are hung during a step (a hung_link fault at or before it).
  bool linkHung(int step) const;
  // Whether this rank's emulated cuIpcOpenMemHandle fails (an ipc_open_fails fault).
  bool ipcOpenFails() const;
  // The device memory this rank's emulated GPU holds (the smallest device_memory_limit); 0: all.
  size_t deviceMemoryLimit() const;

 private:
  bool mine(const FaultSpec& f) const;

  const Scenario& s_;
  int rank_;
  int nranks_;
};

// True when a fault that changes what some member of this rank's group of communicator `comm`
// issues (skip, extra_op, wrong_*) took effect at or before (step, op): the data of that group is
// then undefined and the self-check is off. Pure.
bool groupDesynced(const Scenario& s, const JobLayout& job, int comm, int world_rank, int step,
                   int op);

// A human-readable one-liner for logs: "hang at step 3 op 1".
std::string describeFault(const FaultSpec& f);

}  // namespace ncclscope::sim
