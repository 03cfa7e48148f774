// Fuzz target: any bytes offered as a PyTorch Flight Recorder dump go through the direct decoder
// (DecodeFrDumpPickle, with and without frames) and the generic path (ParsePickle +
// DecodeFrDump); it traps where they disagree: one reads a dump the other refuses, the dumps
// differ, or the errors do. Seeds: sample dumps of every version in WritePickle's layout and in
// the memo layouts of torch and CPython (frames and lists shared through the memo).
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "tests/trace/flight_recorder/fr_sample_dumps.h"
#include "tests/trace/flight_recorder/memo_layout_pickle.h"
#include "trace/flight_recorder/fr_dump.h"
#include "trace/flight_recorder/fr_pickle_decode.h"
#include "trace/flight_recorder/pickle_reader.h"
#include "trace/flight_recorder/pickle_writer.h"

using namespace ncclscope::flight_recorder;

namespace {

// Equal, or a NaN duration on both sides (NaN != NaN): then the pickles they make are the same.
bool Same(const FrDump& a, const FrDump& b) {
  return a == b || WritePickle(EncodeFrDump(a)) == WritePickle(EncodeFrDump(b));
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  // Limits small enough that a mutation cannot make a slow input, large enough for the seeds.
  PickleLimits limits;
  limits.max_elements = 1 << 16;
  limits.max_string_bytes = 1 << 20;
  std::string direct_error;
  FrPickleDecodePath path = FrPickleDecodePath::kDirect;
  const auto direct = DecodeFrDumpPickle(data, size, limits, &direct_error, true, &path);
  if (!direct && direct_error.empty()) __builtin_trap();  // a rejection must always say why
  // Refused: a MARK whose values were taken, which ParsePickle would index past its stack for.
  if (path == FrPickleDecodePath::kRefused) return 0;
  std::string generic_error;
  std::optional<FrDump> generic;
  if (auto tree = ParsePickle(data, size, limits, &generic_error)) {
    generic = DecodeFrDump(*tree, &generic_error);
  }
  if (direct.has_value() != generic.has_value()) __builtin_trap();
  if (!direct) {
    if (direct_error != generic_error) __builtin_trap();
    return 0;
  }
  if (!Same(*direct, *generic)) __builtin_trap();
  std::string error;
  auto no_frames = DecodeFrDumpPickle(data, size, limits, &error, false);
  if (!no_frames) __builtin_trap();
  for (FrEntry& e : generic->entries) e.frames.reset();
  if (!Same(*no_frames, *generic)) __builtin_trap();
  return 0;
}

extern "C" void FuzzSeeds(std::vector<std::string>* seeds) {
  namespace t = ncclscope::flight_recorder::testing;
  for (const char* version : {"2.2", "2.4", "2.7", "2.10"}) {
    PickleValue tree = t::SampleDumpTree(version);
    seeds->push_back(WritePickle(tree));
    // The dump as EncodeFrDump writes it: the frame both entries have is one shared dict.
    seeds->push_back(WritePickle(EncodeFrDump(t::SampleDump(version))));
    // Entry 1 gets all of entry 0's frames, so that the layouts share the whole list too.
    PickleList* entries = tree.AsDict()->items.back().second.AsList();  // written last
    const PickleValue frames = *entries->items[0].AsDict()->Find("frames");
    for (auto& [key, value] : entries->items[1].AsDict()->items) {
      if (std::get<std::string>(key) == "frames") value = frames;
    }
    seeds->push_back(t::WriteMemoLayoutPickle(tree, t::MemoLayout::kTorch, false));
    seeds->push_back(t::WriteMemoLayoutPickle(tree, t::MemoLayout::kCPython, true));
  }
}
