// The content of one PyTorch Flight Recorder (FR) dump, the file a rank writes on a timeout or on
// request (pickle by default; JSON from _dump_nccl_trace_json), decoded from and encoded to the
// value tree of pickle_value.h. Keys, types and order follow torch's dumper
// (torch/csrc/distributed/c10d/FlightRecorderDetail.hpp, getCollectiveTrace/getPgConfig/
// getPgStatus/dump_dict).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "trace/flight_recorder/pickle_reader.h"
#include "trace/flight_recorder/pickle_value.h"

namespace ncclscope::flight_recorder {

// "2.10" is major 2, minor 10. Minor bumps add fields, major bumps change them (the comment on
// version_val in FlightRecorder.hpp), so any 2.x from 2.2 on is read.
struct FrVersion {
  int major = 0;
  int minor = 0;
  // Spelled out: clang-tidy's modernize-use-nullptr misreads a defaulted operator<=>.
  bool operator<(const FrVersion& o) const {
    return major != o.major ? major < o.major : minor < o.minor;
  }
  bool operator>=(const FrVersion& o) const { return !(*this < o); }
  bool operator==(const FrVersion&) const = default;
};
// The version in "MAJOR.MINOR" (digits only), or nullopt. Pure.
std::optional<FrVersion> ParseFrVersion(std::string_view text);

// An entry's state as FR computed it from its CUDA events at dump time.
enum class FrState { kScheduled, kStarted, kCompleted };
const char* FrStateName(FrState state);

// One stack frame (Python, or C++ with TORCH_NCCL_TRACE_CPP_STACK); pickle dumps only.
struct FrFrame {
  std::string name;
  std::string filename;
  int64_t line = 0;
  bool operator==(const FrFrame&) const = default;
};

// One recorded operation (Entry in torch/csrc/distributed/c10d/FlightRecorder.hpp). Fields a
// version does not have keep their defaults.
struct FrEntry {
  int64_t record_id = 0;
  int64_t pg_id = 0;
  std::string pg_name;  // process_group[0]: the group's name (guid)
  std::string pg_desc;  // process_group[1]: e.g. "default_pg"
  int64_t collective_seq_id = 0;
  int64_t p2p_seq_id = 0;
  int64_t op_id = 0;
  std::string profiling_name;  // "nccl:all_reduce", "nccl:send 1->0", ...
  int64_t time_created_ns = 0;
  std::optional<double> duration_ms;  // only when timing was on and the op completed
  std::vector<std::vector<int64_t>> input_sizes;
  std::vector<std::string> input_dtypes;  // 2.3 on
  std::vector<std::vector<int64_t>> output_sizes;
  std::vector<std::string> output_dtypes;  // 2.3 on
  FrState state = FrState::kScheduled;
  // When a CPU thread saw the event fire. Absent: None in pickle, 0 in JSON.
  std::optional<int64_t> time_discovered_started_ns;
  std::optional<int64_t> time_discovered_completed_ns;
  bool retired = false;
  int64_t timeout_ms = 0;                      // 2.3 on
  bool is_p2p = false;                         // 2.3 on
  std::optional<std::string> thread_id;        // 2.10 on
  std::optional<std::string> thread_name;      // 2.10 on
  std::optional<std::vector<FrFrame>> frames;  // only when dumped with stack traces
  bool operator==(const FrEntry&) const = default;
};

// pg_config[key]: a process group's name, description and global ranks ("[0, 1]" in the dump).
struct FrPgConfig {
  std::string key;
  std::string name;
  std::string desc;
  std::vector<int> ranks;
  bool operator==(const FrPgConfig&) const = default;
};

// pg_status[pg_id]: the group's last enqueued, started (-1 without timing) and completed
// collective sequence numbers; ints in pickle, decimal strings in JSON.
struct FrPgStatus {
  std::string pg_id;
  int64_t last_enqueued_collective = -1;
  int64_t last_started_collective = -1;
  int64_t last_completed_collective = -1;
  bool operator==(const FrPgStatus&) const = default;
};

struct FrDump {
  std::string version;                // as written, e.g. "2.10"
  std::string comm_lib_version;       // NCCL's version ("nccl_version" in 2.7); empty when absent
  std::vector<FrPgConfig> pg_config;  // in dump order
  std::vector<FrPgStatus> pg_status;  // in dump order
  std::vector<FrEntry> entries;       // oldest first; empty when dumped without collectives
  bool operator==(const FrDump&) const = default;
};

// The dump `root` holds, or nullopt with *error naming the place and the problem, e.g.
// "entries[3].op_id: expected int, got str" or "entries[0]: missing key 'state'". Unknown keys
// (nccl_comm_state, later additions) are ignored; keys a version did not have yet are optional.
// Accepts both the pickle and the JSON typing of a field (FlightRecorderDetail.hpp's dump and
// dump_json). A key repeated in a hand-built dict counts with its first value (PickleDict::Find).
// Pure.
std::optional<FrDump> DecodeFrDump(const PickleValue& root, std::string* error);

// The dump in the pickle data[0, size), or nullopt with *error set (never empty): the reader's
// error (ReadPickle, naming the offset) or the decoder's (naming the entry and key), the same as
// DecodeFrDump(*ParsePickle(data, size, limits, error), error) sets. The same decoder reads the
// flat form the reader leaves, without a value tree: the importer reads thousands of dumps of
// thousands of entries. With keep_frames false every entry's `frames` is left empty (nullopt)
// but still checked, so a dump with a bad frame is refused. Thread-safe (each thread keeps its
// own working memory between calls); the result owns all its data.
std::optional<FrDump> DecodeFrDumpPickle(const void* data, size_t size, const PickleLimits& limits,
                                         std::string* error, bool keep_frames = true);

// The value tree torch would pickle for `dump`, with the keys of dump.version in torch's order;
// absent optional values are left out (duration_ms, frames) or None (time_discovered_*). A frame
// that appears more than once in the dump (equal name, file and line) is one shared dict, as
// torch's dumper shares each symbolized frame (WritePickle then memoizes it as torch's Pickler
// does). The version must parse (ParseFrVersion); an unparsable one is written as is with 2.10's
// keys. Pure.
PickleValue EncodeFrDump(const FrDump& dump);

}  // namespace ncclscope::flight_recorder
