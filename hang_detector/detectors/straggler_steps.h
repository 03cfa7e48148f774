// Internal to the correlator: the training steps the straggler rules count. A verdict needs
// lateness that is large against the step time and sustained over steps, so one hiccup of a step
// (a preempted process, a page fault) counts once however many collectives it delayed.
//   step      the NVTX step of the call (docs/nvtx.md) where the calls carry one; otherwise one
//             period of the communicator's own calls (PeriodSteps);
//   step time the time between the completions of consecutive NVTX steps, else that period.
// Read-only over the index and the timelines: safe to use from several threads.
#pragma once

#include <cstdint>
#include <vector>

#include "hang_detector/detectors/straggler_scores.h"

namespace ncclscope::hang_detector {

inline constexpr int64_t kNoStep = INT64_MIN;

// The NVTX step of member m's call of sample i, kNoStep when the call carries none.
int64_t NvtxStepOf(const Context& ctx, const CommTimeline& t, size_t m, size_t i);

// How long one training step of communicator t takes: from the NVTX steps of its calls where its
// window's calls carry them (per member, the median over consecutive steps of the time between
// their first completions, per step; the median of the members), else Period(t). NaN when neither
// is known.
double StepTime(const Context& ctx, const CommTimeline& t);

// Steps of t's window from its own period: a step holds one occurrence of each signature the
// program issues once per iteration (several of one it issues several times: the typical count
// of a signature in the window is the number of iterations). Counted back from the newest, so the
// newest iteration of every communicator is step 0 and communicators align. Indexed like the
// window (i - t.WindowBegin()).
std::vector<int64_t> PeriodSteps(const CommTimeline& t);

// The NVTX steps of member m's calls in t's window (kNoStep where a call carries none). Indexed
// like the window.
std::vector<int64_t> NvtxSteps(const Context& ctx, const CommTimeline& t, size_t m);

// The steps of t's window as its first member's calls say (NVTX where most of them carry a step,
// else PeriodSteps): for rules about the communicator as a whole, whose members share the steps.
std::vector<int64_t> StepsOfCommunicator(const Context& ctx, const CommTimeline& t);

}  // namespace ncclscope::hang_detector
