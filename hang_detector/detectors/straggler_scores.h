// Internal to the correlator: the timings straggler detection scores, per communicator and per
// collective that completed on every member. Host clocks of different machines are never compared:
// every quantity is a difference of two times of one rank (design.md, "Identity and time").
//   wait  = device completion - start (entry, or the previous op of that stream if it ran later):
//           the last rank to arrive waits least, the others wait for it;
//   gap   = entry - the rank's newest completion before it: its own time (compute) between seeing
//           its work finish and issuing the next, which a rank that is late only because it waited
//           somewhere else does not have.
// Built from the read-only index: safe to use from several threads.
#pragma once

#include <cmath>
#include <cstdint>
#include <vector>

#include "hang_detector/detectors/detectors.h"

namespace ncclscope::hang_detector {

// Thresholds. Lateness counts when it is large against the step time: at least
// max(kFloorS, kRelative x the step time) (straggler_steps.h) in the median of the steps, and
// sustained: later than the others in at least kSustainedShare of the newest steps, at least
// kMinSteps of them. Medians and counts over steps let jitter and one-off hiccups (a preempted
// process, a page fault) pass.
inline constexpr size_t kWindow = 64;  // newest complete collectives scored per communicator
// Complete collectives kept per communicator: the window and as many before it, the past that
// slow links and the onset ("since") are judged against.
inline constexpr size_t kKept = 2 * kWindow;
inline constexpr size_t kMinSamples = 8;  // fewer: too little to call anything sustained
inline constexpr size_t kMinSteps = 8;    // the same, counted in training steps
inline constexpr double kSustainedShare = 2.0 / 3;
inline constexpr double kFloorS = 0.003;
inline constexpr double kRelative = 0.05;
// A compute straggler's median lateness must also stand this many standard errors above zero,
// the standard error taken from the step-to-step scatter of every rank's lateness: the scheduling
// noise of the job itself (a loaded machine starves ranks in turn, steadily enough for a while
// to pass the other tests).
inline constexpr double kNoiseZ = 4;
// A link is slow when its transfer time is this many times the reference and kFloorS longer.
inline constexpr double kSlowRatio = 1.5;
inline constexpr double kFastRatio = 1.2;  // at most this: known fast (clears its members)
inline constexpr double kNaN = NAN;

// One collective complete on every member; vectors are indexed like CommTimeline::ranks.
struct Sample {
  uint64_t seq = 0;
  OpSignature sig;
  std::vector<uint32_t> pos;   // record of each member
  std::vector<double> wait_s;  // completion - start, one host clock each
  // entry - newest own completion before it; NaN when none, and before the window (only the window
  // is scored on it)
  std::vector<double> gap_s;
  std::vector<int64_t> done_ns;  // monotonic, of the member's own host: only differenced per rank
  double transfer_s = kNaN;      // the smallest wait: the last arriver only waits for the data
};

struct CommTimeline {
  const CommModel* comm = nullptr;
  std::vector<uint32_t> files;  // one per member, in lane order
  std::vector<int> ranks;       // global ranks, like files
  std::vector<Sample> samples;  // by sequence number
  // The newest kWindow samples start here.
  size_t WindowBegin() const { return samples.size() > kWindow ? samples.size() - kWindow : 0; }
};

// Every communicator whose members all have a ring file, with its newest kKept complete
// collectives.
std::vector<CommTimeline> BuildTimelines(const Context& ctx);

// Median of the finite values; NaN when there are none. Reorders nothing (takes a copy).
double Median(std::vector<double> v);
// Median of `sorted` (ascending, finite) without one copy of x, which it holds; NaN when nothing
// is left. O(log n), so scoring every member against the others stays O(n log n).
double MedianWithout(const std::vector<double>& sorted, double x);
// The iteration time: median over the window of the time between completions of consecutive
// collectives with the same signature (median of the members'). What the relative threshold
// scales with; NaN when no signature repeats.
double Period(const CommTimeline& t);
// First sample of the sustained run of `flags` that reaches the end: the earliest flagged sample
// from which at least 60% of the samples up to the end are flagged. flags.size() when none.
size_t Onset(const std::vector<bool>& flags);
// What counts as late, or as computing longer, for a job whose step takes step_time_s:
// max(kFloorS, kRelative x step_time_s); kFloorS when the step time is unknown (NaN).
double LatenessThreshold(double step_time_s);
// "3.2 ms" for evidence lines.
std::string Millis(double s);

// Compute stragglers: ranks that arrive late of their own doing, and whom they keep waiting.
void CheckComputeStragglers(const Context& ctx, const std::vector<CommTimeline>& timelines,
                            std::vector<Verdict>* out);
// Slow links: communicators whose transfer time grew against their sibling groups or their own
// past, localized to the ranks in every slow communicator and no fast one.
void CheckSlowLinks(const Context& ctx, const std::vector<CommTimeline>& timelines,
                    std::vector<Verdict>* out);

}  // namespace ncclscope::hang_detector
