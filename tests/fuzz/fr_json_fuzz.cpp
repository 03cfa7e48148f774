// Fuzz target: any bytes offered as the JSON form of a PyTorch Flight Recorder dump are parsed and
// decoded as a dump, or refused with a reason; never a crash, a hang or unbounded memory. A dump
// that decodes is written as JSON again, and that must read back as the same dump.
// Seeds: EncodeFrDumpJson of dumps of every supported version, one with awkward strings.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "tests/fuzz/fr_seed_dump.h"
#include "trace/flight_recorder/fr_dump.h"
#include "trace/flight_recorder/fr_json.h"

using namespace ncclscope::flight_recorder;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string error;
  auto tree = ParseFrJson(std::string_view(reinterpret_cast<const char*>(data), size), &error);
  if (!tree) {
    if (error.empty()) __builtin_trap();  // a rejection must always say why
    return 0;
  }
  auto dump = DecodeFrDump(*tree, &error);
  if (!dump) {
    if (error.empty()) __builtin_trap();
    return 0;
  }
  auto again = ParseFrJson(EncodeFrDumpJson(*dump), &error);
  if (!again) __builtin_trap();
  auto dump_again = DecodeFrDump(*again, &error);
  if (!dump_again) __builtin_trap();
  // What JSON cannot carry differs: frames, and pg_config / pg_status order (written sorted).
  if (dump_again->entries.size() != dump->entries.size() || dump_again->version != dump->version) {
    __builtin_trap();
  }
  return 0;
}

using fuzzing::SeedDump;

extern "C" void FuzzSeeds(std::vector<std::string>* seeds) {
  for (const char* version : {"2.2", "2.4", "2.7", "2.10"}) {
    seeds->push_back(EncodeFrDumpJson(SeedDump(version, /*frames=*/false, /*awkward=*/false)));
  }
  seeds->push_back(EncodeFrDumpJson(SeedDump("2.10", /*frames=*/false, /*awkward=*/true)));
}
