#include "tests/fuzz/fr_seed_dump.h"

#include <cstdint>
#include <vector>

namespace ncclscope::flight_recorder::fuzzing {

FrDump SeedDump(const std::string& version, bool frames, bool awkward) {
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
    if (frames)
      e.frames = std::vector<FrFrame>{{"all_reduce", "c10d.py", 2707}, {"step", "t.py", 9}};
    d.entries.push_back(e);
  }
  return d;
}

}  // namespace ncclscope::flight_recorder::fuzzing
