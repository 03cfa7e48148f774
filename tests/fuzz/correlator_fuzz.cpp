// Fuzz target: any set of ring files (valid ones written by the trace writer, then mutated; see
// ring_set_codec.h for the input) goes through the correlator and both renderings. Always an
// analysis, never a crash: unusable exactly when no file could be read, else at least one
// verdict, an exit code the CLI documents, and a JSON document that parses.
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>

#include "hang_detector/decision/correlator.h"
#include "hang_detector/verdicts/verdict_json.h"
#include "hang_detector/verdicts/verdict_text.h"
#include "tests/fuzz/ring_set_codec.h"
#include "trace/ring_reader.h"
#include "trace/trace_set.h"

namespace {

namespace hd = ncclscope::hang_detector;
using ncclscope::trace::TraceSet;

// The newest heartbeat of the set in wall-clock ns, in wrapping arithmetic: a mutated header may
// hold any values, and this is the fuzz target's own sum, not the correlator's.
int64_t NewestHeartbeat(const TraceSet& set) {
  int64_t newest = 0;
  for (const auto& f : set.files) {
    const uint64_t wall = static_cast<uint64_t>(f.start_realtime_ns) -
                          static_cast<uint64_t>(f.start_monotonic_ns) +
                          static_cast<uint64_t>(f.heartbeat_monotonic_ns);
    newest = std::max(newest, static_cast<int64_t>(wall));
  }
  return newest;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const ncclscope::fuzz::RingSetInput in = ncclscope::fuzz::DecodeRingSet(data, size);
  TraceSet set;
  for (size_t i = 0; i < in.rings.size(); ++i) {
    const ncclscope::fuzz::RingImage& image = in.rings[i];
    std::string error;
    const std::string name = "rank" + std::to_string(i) + ".ring";
    if (auto s = ncclscope::trace::ParseRing(image.data(), image.size, name, &error)) {
      set.files.push_back(std::move(*s));
    } else {
      if (error.empty()) __builtin_trap();  // a rejection must always say why
      set.errors.push_back(error);
    }
  }
  hd::AnalyzeOptions options;
  options.job_ended = (in.options & 1) != 0;
  // From the writers' last sign of life up to 28 s later: fresh, stalled and long-dead jobs.
  options.now_wall_ns = NewestHeartbeat(set) + ((in.options >> 1) & 7) * int64_t{4000000000};
  const hd::Analysis a = hd::Analyze(set, options);

  if (a.usable == set.files.empty()) __builtin_trap();
  if (a.usable && a.verdicts.empty()) __builtin_trap();
  const int code = hd::ExitCode(a);
  if (code < 0 || code > 4 || (!a.usable && code != 3)) __builtin_trap();
  if (hd::RenderText(a, (in.options & 0x10) != 0).empty()) __builtin_trap();
  if (!nlohmann::json::accept(hd::RenderJson(a, (in.options & 0x20) != 0 ? 0 : 2))) {
    __builtin_trap();
  }
  return 0;
}
