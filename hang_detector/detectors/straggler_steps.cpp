// Steps and step times of the straggler rules: NVTX where the calls say which step they belong
// to, else the communicator's own period.
#include "hang_detector/detectors/straggler_steps.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <tuple>

#include "trace/record.h"

namespace ncclscope::hang_detector {

int64_t NvtxStepOf(const Context& ctx, const CommTimeline& t, size_t m, size_t i) {
  const uint32_t word = ctx.index.files()[t.files[m]].NvtxWordAt(t.samples[i].pos[m]);
  return trace::NvtxHasStep(word) ? static_cast<int64_t>(trace::NvtxStep(word)) : kNoStep;
}

double StepTime(const Context& ctx, const CommTimeline& t) {
  std::vector<double> per_member, d;
  std::map<int64_t, int64_t> first_done;  // step -> its first completion, on the member's clock
  for (size_t m = 0; m < t.ranks.size(); ++m) {
    first_done.clear();
    for (size_t i = t.WindowBegin(); i < t.samples.size(); ++i) {
      const int64_t step = NvtxStepOf(ctx, t, m, i);
      if (step == kNoStep) continue;
      const int64_t done = t.samples[i].done_ns[m];
      auto [it, inserted] = first_done.try_emplace(step, done);
      if (!inserted) it->second = std::min(it->second, done);
    }
    d.clear();
    for (auto it = first_done.begin(); it != first_done.end() && std::next(it) != first_done.end();
         ++it) {
      const auto next = std::next(it);
      // In double: times from a damaged file may be any int64.
      d.push_back((static_cast<double>(next->second) - static_cast<double>(it->second)) * 1e-9 /
                  static_cast<double>(next->first - it->first));
    }
    per_member.push_back(Median(d));
  }
  const double nvtx = Median(per_member);
  return std::isfinite(nvtx) && nvtx > 0 ? nvtx : Period(t);
}

namespace {

// A signature as a map key; the reduction op is left out, as OpSignature's equality lets an
// unknown one agree with any.
using SigKey = std::tuple<uint32_t, int32_t, int32_t, uint64_t>;
SigKey KeyOf(const OpSignature& g) {
  return {g.op, g.dtype, g.root, g.count};
}

}  // namespace

std::vector<int64_t> PeriodSteps(const CommTimeline& t) {
  const size_t begin = t.WindowBegin(), n = t.samples.size();
  std::map<SigKey, size_t> count;
  for (size_t i = begin; i < n; ++i) ++count[KeyOf(t.samples[i].sig)];
  std::vector<double> counts;
  for (const auto& [sig, c] : count) counts.push_back(static_cast<double>(c));
  const double iterations = std::max(1.0, Median(counts));
  std::map<SigKey, size_t> later;  // of the same signature, newer than the sample
  std::vector<int64_t> out(n - begin);
  for (size_t i = n; i-- > begin;) {
    const SigKey sig = KeyOf(t.samples[i].sig);
    // How many of this signature one iteration issues (a layer's allreduce, once per layer).
    const double per_iteration =
        std::max(1.0, std::round(static_cast<double>(count[sig]) / iterations));
    out[i - begin] = -static_cast<int64_t>(static_cast<double>(later[sig]++) / per_iteration);
  }
  return out;
}

std::vector<int64_t> NvtxSteps(const Context& ctx, const CommTimeline& t, size_t m) {
  std::vector<int64_t> out;
  for (size_t i = t.WindowBegin(); i < t.samples.size(); ++i)
    out.push_back(NvtxStepOf(ctx, t, m, i));
  return out;
}

std::vector<int64_t> StepsOfCommunicator(const Context& ctx, const CommTimeline& t) {
  const size_t begin = t.WindowBegin(), n = t.samples.size();
  size_t with_step = 0;
  for (size_t i = begin; i < n; ++i) with_step += NvtxStepOf(ctx, t, 0, i) != kNoStep ? 1 : 0;
  return with_step > 0 && with_step * 2 >= n - begin ? NvtxSteps(ctx, t, 0) : PeriodSteps(t);
}

}  // namespace ncclscope::hang_detector
