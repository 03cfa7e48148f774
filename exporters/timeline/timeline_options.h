// What `ncclscope timeline` writes: which ranks, which communicator, which time window, and the
// verdicts to mark. Parsing of the options that have their own syntax. Pure functions.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "hang_detector/verdicts/verdict.h"

namespace ncclscope::exporters::timeline {

struct TimelineOptions {
  // Inclusive ranges of global ranks ("0-63,128"); empty: every rank.
  std::vector<std::pair<int, int>> ranks;
  // A communicator's name or the first hex digits (4 or more) of its id; empty: every one.
  std::string comm;
  // Time window in seconds after the trace's origin (the earliest selected ring file's creation);
  // a call or operation is kept when its interval meets it. Unset: unbounded.
  std::optional<double> from_s;
  std::optional<double> to_s;
  // Centre the window on one operation instead: sequence number `around_seq` of the communicator
  // `around_comm` (a name or 4+ leading hex digits of its id, as `comm`). The window runs from the
  // first member's call to the last member's completion (or call, for one that never completed),
  // widened by around_margin_s on each side. Empty around_comm: no centring.
  std::string around_comm;
  uint64_t around_seq = 0;
  double around_margin_s = 5;
  // Verdicts to mark on their culprits' tracks (the correlator's, run by the caller); may be null.
  const hang_detector::Analysis* analysis = nullptr;
};

// "0-63,128,200-255" -> ranges; false with *error naming the bad part.
bool ParseRankList(const std::string& text, std::vector<std::pair<int, int>>* out,
                   std::string* error);

bool RankSelected(const TimelineOptions& options, int rank);

}  // namespace ncclscope::exporters::timeline
