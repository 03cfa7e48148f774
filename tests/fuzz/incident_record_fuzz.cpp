// Fuzz target: any bytes offered as the watchdog's decision file (a follower reads whatever the
// trace directory holds there). The parser refuses them with a message, or what it accepts renders
// back to text that parses to the same decision; the abort list of any rank stays within what the
// decision names, and a follower acts on nothing else. Never a crash, never an unbounded
// allocation. Seeds are rendered decisions.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "plugin/watchdog_decision.h"

namespace {

namespace pl = ncclscope::plugin;

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  pl::Decision d;
  std::string error;
  const bool parsed = pl::ParseDecision(text, &d, &error);
  // A follower acts on nothing but a whole decision of its job's confirmed hang.
  std::vector<uint64_t> comms;
  std::string follow_error;
  const pl::Follow f =
      pl::FollowDecisionText(text, pl::JobKey("1234.0"), 0, 1, &comms, &follow_error);
  if (f == pl::Follow::kAct && !(parsed && d.stage == pl::DecisionStage::kHang)) __builtin_trap();
  if (f == pl::Follow::kIgnored && follow_error.empty()) __builtin_trap();
  if (!parsed) {
    if (error.empty()) __builtin_trap();
    return 0;
  }
  pl::Decision back;
  if (!pl::ParseDecision(pl::RenderDecision(d), &back, &error) || !(back == d)) __builtin_trap();
  for (const int rank : {0, 1, 7}) {
    const std::vector<uint64_t> ids = pl::CommsToAbort(d, rank);
    if (d.stage != pl::DecisionStage::kHang && !ids.empty()) __builtin_trap();
    if (ids.size() > d.hang_comms.size() + d.waits.size()) __builtin_trap();
  }
  return 0;
}

extern "C" void FuzzSeeds(std::vector<std::string>* seeds) {
  pl::Decision d;
  d.job = pl::JobKey("1234.0");
  d.holder_pid = 4242;
  d.holder_rank = 3;
  d.written_wall_ns = 1'800'000'000'000'000'000;
  d.onset_wall_ns = 1'799'999'990'000'000'000;
  d.passes = 2;
  seeds->push_back(pl::RenderDecision(d));
  d.stage = pl::DecisionStage::kSuspect;
  d.incident = 0x0123456789abcdefULL;
  seeds->push_back(pl::RenderDecision(d));
  d.stage = pl::DecisionStage::kHang;
  d.hang_comms = {0xaa, 0xbb};
  d.waits = {{0xaa, {0, 1, 3}}, {0xcc, {5, 6, 7}}};
  seeds->push_back(pl::RenderDecision(d));
}
