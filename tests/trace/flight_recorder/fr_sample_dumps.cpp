#include "tests/trace/flight_recorder/fr_sample_dumps.h"

namespace ncclscope::flight_recorder::testing {

PickleDict D(std::initializer_list<std::pair<const char*, PickleValue>> items) {
  PickleDict d;
  for (const auto& [key, value] : items) d.items.emplace_back(std::string(key), value);
  return d;
}

namespace {

PickleValue Frame(const char* name, const char* file, int line) {
  return D({{"name", name}, {"filename", file}, {"line", line}});
}

// The keys a version adds, in torch's order, appended to `d`.
void Add(PickleDict* d, std::initializer_list<std::pair<const char*, PickleValue>> items) {
  for (const auto& [key, value] : items) d->items.emplace_back(std::string(key), value);
}

// Every version has the entry keys input_dtypes, output_dtypes, timeout_ms and is_p2p: 2.2's
// dumper writes them (c10d/NCCLUtils.hpp at version_val "2.2", NCCLTraceBuffer::
// getCollectiveTrace).
PickleValue AllReduceEntry(const std::string& version) {
  PickleDict e;
  Add(&e,
      {{"frames", PickleList{{Frame("all_reduce", "torch/distributed/distributed_c10d.py", 2707),
                              Frame("train_step", "/job/train.py", 41)}}},
       {"record_id", 41},
       {"pg_id", 0},
       {"process_group", PickleTuple{{"0", "default_pg"}}}});
  if (version == "2.10") Add(&e, {{"thread_name", "pt_main_thread"}, {"thread_id", "139872"}});
  Add(&e, {{"collective_seq_id", 12},
           {"p2p_seq_id", 0},
           {"op_id", 12},
           {"profiling_name", "nccl:all_reduce"},
           {"time_created_ns", int64_t{1724779239936775119}},
           {"duration_ms", 0.25},
           {"input_sizes", PickleList{{PickleList{{3, 4}}}}}});
  Add(&e, {{"input_dtypes", PickleList{{"Float"}}}});
  Add(&e, {{"output_sizes", PickleList{{PickleList{{3, 4}}}}}});
  Add(&e, {{"output_dtypes", PickleList{{"Float"}}}});
  Add(&e, {{"state", "completed"},
           {"time_discovered_started_ns", int64_t{1724779239936875119}},
           {"time_discovered_completed_ns", int64_t{1724779239937775119}},
           {"retired", true}});
  Add(&e, {{"timeout_ms", 600000}, {"is_p2p", false}});
  return e;
}

PickleValue SendEntry(const std::string& version) {
  PickleDict e;
  // The caller's frame is the all_reduce's too: torch's dumper puts one dict in both lists.
  Add(&e, {{"frames", PickleList{{Frame("send", "torch/distributed/distributed_c10d.py", 2450),
                                  Frame("train_step", "/job/train.py", 41)}}},
           {"record_id", 42},
           {"pg_id", 1},
           {"process_group", PickleTuple{{"1", "pp"}}}});
  if (version == "2.10") Add(&e, {{"thread_name", "pt_main_thread"}, {"thread_id", "139872"}});
  Add(&e, {{"collective_seq_id", 0},
           {"p2p_seq_id", 3},
           {"op_id", 13},
           {"profiling_name", "nccl:send 0->1"},
           {"time_created_ns", int64_t{1724779239938775119}},
           {"input_sizes", PickleList{{PickleList{{1048576}}}}}});
  Add(&e, {{"input_dtypes", PickleList{{"BFloat16"}}}});
  Add(&e, {{"output_sizes", PickleList{{PickleList{{1048576}}}}}});
  Add(&e, {{"output_dtypes", PickleList{{"BFloat16"}}}});
  Add(&e, {{"state", "scheduled"},
           {"time_discovered_started_ns", PickleValue::None()},
           {"time_discovered_completed_ns", PickleValue::None()},
           {"retired", false}});
  Add(&e, {{"timeout_ms", 600000}, {"is_p2p", true}});
  return e;
}

}  // namespace

PickleValue SampleDumpTree(const std::string& version) {
  PickleDict top;
  Add(&top, {{"version", version},
             {"pg_config",
              D({{"0", D({{"name", "0"}, {"desc", "default_pg"}, {"ranks", "[0, 1, 2, 3]"}})},
                 {"1", D({{"name", "1"}, {"desc", "pp"}, {"ranks", "[0, 1]"}})}})}});
  if (version == "2.10") Add(&top, {{"comm_lib_version", "2.27.3"}});
  if (version == "2.7") Add(&top, {{"nccl_version", "2.21.5"}});
  if (version != "2.2") {
    Add(&top, {{"pg_status", D({{"0", D({{"last_enqueued_collective", 12},
                                         {"last_started_collective", -1},
                                         {"last_completed_collective", 12}})},
                                {"1", D({{"last_enqueued_collective", 0},
                                         {"last_started_collective", -1},
                                         {"last_completed_collective", 0}})}})}});
  }
  Add(&top, {{"entries", PickleList{{AllReduceEntry(version), SendEntry(version)}}}});
  return top;
}

FrDump SampleDump(const std::string& version) {
  const bool status = version != "2.2";  // pg_status: 2.3 on
  FrDump d;
  d.version = version;
  d.comm_lib_version = version == "2.10" ? "2.27.3" : version == "2.7" ? "2.21.5" : "";
  d.pg_config = {{"0", "0", "default_pg", {0, 1, 2, 3}}, {"1", "1", "pp", {0, 1}}};
  if (status) d.pg_status = {{"0", 12, -1, 12}, {"1", 0, -1, 0}};

  FrEntry a;
  a.record_id = 41;
  a.pg_id = 0;
  a.pg_name = "0";
  a.pg_desc = "default_pg";
  a.collective_seq_id = 12;
  a.op_id = 12;
  a.profiling_name = "nccl:all_reduce";
  a.time_created_ns = 1724779239936775119;
  a.duration_ms = 0.25;
  a.input_sizes = {{3, 4}};
  a.output_sizes = {{3, 4}};
  a.input_dtypes = {"Float"};
  a.output_dtypes = {"Float"};
  a.timeout_ms = 600000;
  a.state = FrState::kCompleted;
  a.time_discovered_started_ns = 1724779239936875119;
  a.time_discovered_completed_ns = 1724779239937775119;
  a.retired = true;
  a.frames = std::vector<FrFrame>{{"all_reduce", "torch/distributed/distributed_c10d.py", 2707},
                                  {"train_step", "/job/train.py", 41}};

  FrEntry s;
  s.record_id = 42;
  s.pg_id = 1;
  s.pg_name = "1";
  s.pg_desc = "pp";
  s.p2p_seq_id = 3;
  s.op_id = 13;
  s.profiling_name = "nccl:send 0->1";
  s.time_created_ns = 1724779239938775119;
  s.input_sizes = {{1048576}};
  s.output_sizes = {{1048576}};
  s.input_dtypes = {"BFloat16"};
  s.output_dtypes = {"BFloat16"};
  s.timeout_ms = 600000;
  s.is_p2p = true;
  s.frames = std::vector<FrFrame>{{"send", "torch/distributed/distributed_c10d.py", 2450},
                                  {"train_step", "/job/train.py", 41}};
  if (version == "2.10") {
    a.thread_name = s.thread_name = "pt_main_thread";
    a.thread_id = s.thread_id = "139872";
  }
  d.entries = {a, s};
  return d;
}

}  // namespace ncclscope::flight_recorder::testing
