#include "tests/hang_detector/step_model.h"

#include <algorithm>

#include "tests/hang_detector/nvtx_records.h"

namespace ncclscope::testing {

double StepModel::Factor(const std::vector<Slow>& slow, int rank) const {
  double f = 1;
  for (const Slow& s : slow) {
    if (s.rank == rank && step_ >= s.from && step_ < s.until) f *= s.factor;
  }
  return f;
}

void StepModel::Step(const std::vector<ModelOp>& ops,
                     const std::vector<std::vector<int>>& op_members) {
  std::uniform_real_distribution<double> jitter(0, 1);
  std::vector<double> enter(free_.size()), done = free_;
  for (size_t r = 0; r < free_.size(); ++r) {
    const double extra = extra_s ? extra_s(static_cast<int>(r), step_) : 0.0;
    enter[r] = free_[r] +
               std::max(0.0, compute_s * Factor(compute_slow, static_cast<int>(r)) + extra) +
               jitter_s * jitter(rng_);
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
      if (nvtx_step >= 0) rec.reserved = NvtxWord(static_cast<uint64_t>(nvtx_step), 0);
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
