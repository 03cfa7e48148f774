#include "tests/hang_detector/step_model.h"

#include <algorithm>

namespace ncclscope::testing {

double StepModel::Factor(const std::vector<Slow>& slow, int rank) const {
  double f = 1;
  for (const Slow& s : slow) {
    if (s.rank == rank && step_ >= s.from) f *= s.factor;
  }
  return f;
}

void StepModel::Step(const std::vector<ModelOp>& ops,
                     const std::vector<std::vector<int>>& op_members) {
  std::uniform_real_distribution<double> jitter(0, 1);
  std::vector<double> enter(free_.size()), done = free_;
  for (size_t r = 0; r < free_.size(); ++r) {
    enter[r] =
        free_[r] + compute_s * Factor(compute_slow, static_cast<int>(r)) + jitter_s * jitter(rng_);
  }
  for (size_t i = 0; i < ops.size(); ++i) {
    const std::vector<int>& m = op_members[i];
    double last = 0, link = 1;
    for (int r : m) {
      last = std::max(last, enter[r] + 1e-5 * static_cast<double>(i));
      link = std::max(link, Factor(link_slow, r));
    }
    const double end = last + ops[i].transfer_s * link;
    for (int r : m) {
      const double t = enter[r] + 1e-5 * static_cast<double>(i);
      trace::RecordData& rec =
          job_->Coll(r, ops[i].comm, ops[i].op, t, Done::kCompleted, ops[i].count);
      // Completion is observed by a poller: a little later on each rank.
      const double observed = end + 2e-4 * jitter(rng_);
      rec.t_device_done_ns = rec.t_enter_ns + static_cast<int64_t>((observed - t) * 1e9);
      done[r] = std::max(done[r], observed);
    }
  }
  free_ = done;
  ++step_;
}

double StepModel::Now() const {
  return *std::max_element(free_.begin(), free_.end());
}

}  // namespace ncclscope::testing
