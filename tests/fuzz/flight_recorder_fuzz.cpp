// Fuzz target: any bytes offered as a PyTorch Flight Recorder dump are parsed as a pickle and
// decoded as a dump, or refused with a reason; never a crash, a hang or unbounded memory.
// Seeds: dumps of every supported version written by PickleWriter, one with stack frames that its
// entries share (one memoized dict each, as torch writes them).
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "tests/fuzz/fr_seed_dump.h"
#include "trace/flight_recorder/fr_dump.h"
#include "trace/flight_recorder/pickle_reader.h"
#include "trace/flight_recorder/pickle_writer.h"

using namespace ncclscope::flight_recorder;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  // Limits small enough that a mutation cannot make a slow input, large enough for the seeds.
  PickleLimits limits;
  limits.max_elements = 1 << 16;
  limits.max_string_bytes = 1 << 20;
  std::string error;
  auto tree = ParsePickle(data, size, limits, &error);
  if (!tree) {
    if (error.empty()) __builtin_trap();  // a rejection must always say why
    return 0;
  }
  auto dump = DecodeFrDump(*tree, &error);
  if (!dump) {
    if (error.empty()) __builtin_trap();
    return 0;
  }
  // What decodes is written again, and that reads back as a dump (default limits: the written
  // tree may add a few keys per entry that the input lacked).
  const std::string bytes = WritePickle(EncodeFrDump(*dump));
  auto again = ParsePickle(bytes.data(), bytes.size(), PickleLimits{}, &error);
  if (!again || !DecodeFrDump(*again, &error)) __builtin_trap();
  return 0;
}

using fuzzing::SeedDump;

extern "C" void FuzzSeeds(std::vector<std::string>* seeds) {
  for (const char* version : {"2.2", "2.4", "2.7", "2.10"}) {
    seeds->push_back(
        WritePickle(EncodeFrDump(SeedDump(version, /*frames=*/false, /*awkward=*/false))));
  }
  seeds->push_back(WritePickle(EncodeFrDump(SeedDump("2.10", /*frames=*/true, /*awkward=*/false))));
}
