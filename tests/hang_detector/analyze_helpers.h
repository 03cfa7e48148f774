// Shorthands for the correlator tests: analyse a built job as of job time `now`.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>

#include "hang_detector/decision/correlator.h"
#include "tests/hang_detector/job_builder.h"

namespace ncclscope::testing {

using hang_detector::Analysis;
using hang_detector::Verdict;
using hang_detector::VerdictClass;
using trace::OpType;

// Live analysis: every writer's process runs unless the probe says otherwise.
// `o` gives the thresholds; its time and probe are set here.
inline Analysis AnalyzeWith(const JobBuilder& job, double now, hang_detector::AnalyzeOptions o,
                            const FakeProbe* probe = nullptr) {
  static const FakeProbe running;
  o.now_wall_ns = JobBuilder::Wall(now);
  o.probe = probe != nullptr ? probe : &running;
  return hang_detector::Analyze(job.Build(), o);
}

inline Analysis AnalyzeAt(const JobBuilder& job, double now, const FakeProbe* probe = nullptr) {
  return AnalyzeWith(job, now, {}, probe);
}

// Options under which any wait the correlator calls a hang is confirmed at once: for tests about
// who is blamed, not about when.
inline hang_detector::AnalyzeOptions ConfirmAtOnce() {
  hang_detector::AnalyzeOptions o;
  o.confirm_floor_s = 0;
  o.confirm_factor = 0;
  return o;
}

inline const Verdict& First(const Analysis& a) {
  EXPECT_FALSE(a.verdicts.empty());
  return a.verdicts.front();
}

inline bool Mentions(const Verdict& v, int rank) {
  return std::any_of(v.evidence.begin(), v.evidence.end(),
                     [&](const hang_detector::Evidence& e) { return e.rank == rank; });
}

}  // namespace ncclscope::testing
