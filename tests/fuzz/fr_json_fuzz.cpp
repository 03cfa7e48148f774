// Fuzz target: any bytes offered as the JSON form of a PyTorch Flight Recorder dump are parsed and
// decoded as a dump, or refused with a reason; never a crash, a hang or unbounded memory. A dump
// that decodes is written as JSON again, and that must read back as the same dump.
// Seeds: EncodeFrDumpJson of dumps of every supported version, one with awkward strings.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

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

namespace {

FrDump SeedDump(const std::string& version, bool awkward) {
  FrDump d;
  d.version = version;
  d.comm_lib_version = "2.27.3";
  d.pg_config = {{"0", "0", "default_pg", {0, 1, 2, 3}}, {"1", "1", "pp", {0, 1}}};
  d.pg_status = {{"0", 12, -1, 11}};
  for (int i = 0; i < 3; ++i) {
    FrEntry e;
    e.record_id = 40 + i;
    e.pg_id = i % 2;
    e.pg_name = e.pg_id == 0 ? "0" : "1";
    e.pg_desc = e.pg_id == 0 ? "default_pg" : "pp";
    e.collective_seq_id = 10 + i;
    e.op_id = 10 + i;
    e.profiling_name = i == 2 ? "nccl:send 0->1" : "nccl:all_reduce";
    if (awkward) e.profiling_name += " \"q\" \\ \x01 caf\xc3\xa9";
    e.time_created_ns = int64_t{1724779239936775119} + i;
    if (i == 0) e.duration_ms = 0.5;
    e.input_sizes = {{3, 4}};
    e.output_sizes = {{3, 4}};
    e.input_dtypes = e.output_dtypes = {"Float"};
    e.state = i == 0 ? FrState::kCompleted : FrState::kScheduled;
    if (i == 0)
      e.time_discovered_started_ns = e.time_discovered_completed_ns = e.time_created_ns + 5;
    e.timeout_ms = 600000;
    e.is_p2p = i == 2;
    e.thread_id = "1";
    e.thread_name = "main";
    d.entries.push_back(e);
  }
  return d;
}

}  // namespace

extern "C" void FuzzSeeds(std::vector<std::string>* seeds) {
  for (const char* version : {"2.2", "2.4", "2.7", "2.10"}) {
    seeds->push_back(EncodeFrDumpJson(SeedDump(version, false)));
  }
  seeds->push_back(EncodeFrDumpJson(SeedDump("2.10", true)));
}
