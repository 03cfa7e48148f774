// Fuzz target: any bytes offered as a PyTorch Flight Recorder dump go through DecodeFrDumpPickle
// (the decoder on the reader's flat form, with and without frames) and the value-tree path
// (ParsePickle + DecodeFrDump, which flattens the tree again); it traps where they disagree: one
// reads a dump the other refuses, the dumps differ, or the errors do. Seeds: sample dumps of every
// version in WritePickle's layout and in the memo layouts of torch and CPython (frames and lists
// shared through the memo).
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "tests/trace/flight_recorder/fr_sample_dumps.h"
#include "tests/trace/flight_recorder/memo_layout_pickle.h"
#include "trace/flight_recorder/fr_dump.h"
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
  const auto direct = DecodeFrDumpPickle(data, size, limits, &direct_error, true);
  if (!direct && direct_error.empty()) __builtin_trap();  // a rejection must always say why
  std::string tree_error;
  std::optional<FrDump> tree_dump;
  if (auto tree = ParsePickle(data, size, limits, &tree_error)) {
    tree_dump = DecodeFrDump(*tree, &tree_error);
  }
  if (direct.has_value() != tree_dump.has_value()) __builtin_trap();
  if (!direct) {
    if (direct_error != tree_error) __builtin_trap();
    return 0;
  }
  if (!Same(*direct, *tree_dump)) __builtin_trap();
  std::string error;
  auto no_frames = DecodeFrDumpPickle(data, size, limits, &error, false);
  if (!no_frames) __builtin_trap();
  for (FrEntry& e : tree_dump->entries) e.frames.reset();
  if (!Same(*no_frames, *tree_dump)) __builtin_trap();
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
