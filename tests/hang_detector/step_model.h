// A tiny model of a synchronous training loop, written into a JobBuilder: every step each rank
// computes, issues its collectives back to back, and waits for them. A collective completes on
// every member once the last member started it plus the transfer time, which a slow link
// multiplies for every member of the groups it is in (as in the emulator). Not thread-safe.
#pragma once

#include <functional>
#include <limits>
#include <random>
#include <vector>

#include "tests/hang_detector/job_builder.h"

namespace ncclscope::testing {

struct ModelOp {
  uint64_t comm = 0;
  trace::OpType op = trace::OpType::kAllReduce;
  double transfer_s = 0.001;
  uint64_t count = 256;
};

class StepModel {
 public:
  StepModel(JobBuilder* job, int ranks, uint32_t seed) : job_(job), free_(ranks, 0.0), rng_(seed) {}

  double compute_s = 0.020;
  double jitter_s = 0;  // uniform [0, jitter) added to every rank's compute
  // Ranks whose compute (or transfers) is multiplied from step `from` on, before step `until`.
  struct Slow {
    int rank;
    double factor;
    int from;
    int until = std::numeric_limits<int>::max();
  };
  std::vector<Slow> compute_slow, link_slow;
  // Host time a rank spends before the collectives of a step besides its compute (a scheduling
  // delay, a data loader); negative shortens its compute. (rank, step) -> seconds; none when empty.
  std::function<double(int, int)> extra_s;
  // When >= 0, the NVTX step every collective of the next Step is called in (its reserved word).
  int nvtx_step = -1;

  // Runs one step of `ops` (each on its comm's member list).
  void Step(const std::vector<ModelOp>& ops, const std::vector<std::vector<int>>& op_members);
  double Now() const;                  // when the last rank finished its last step
  int Steps() const { return step_; }  // steps run so far

 private:
  double Factor(const std::vector<Slow>& slow, int rank) const;

  JobBuilder* job_;
  std::vector<double> free_;  // when each rank finished its previous step
  int step_ = 0;
  std::mt19937 rng_;
};

}  // namespace ncclscope::testing
