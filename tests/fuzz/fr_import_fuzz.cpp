// Fuzz target: any bytes offered as a Flight Recorder dump of rank 1 of a two-rank job go all the
// way `ncclscope analyze DIR` takes them (pickle or JSON by content, the dump decoder, the mapping
// onto ring records, the job index and the correlator, beside a well-formed dump of rank 0):
// never a crash, a hang or unbounded memory, and the records keep the ring reader's guarantees
// (indices strictly growing, what is pending carries its own slot's marker), each names an entry
// of the dump (what an analysis cites is named by that entry's record_id) and a device time names
// the op record right before it (what `stats` joins it to).
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "hang_detector/decision/correlator.h"
#include "hang_detector/ingest/rank_file.h"
#include "trace/flight_recorder/fr_dir.h"
#include "trace/flight_recorder/fr_json.h"
#include "trace/flight_recorder/fr_records.h"
#include "trace/flight_recorder/pickle_reader.h"
#include "trace/flight_recorder/pickle_writer.h"

using namespace ncclscope;
using namespace ncclscope::flight_recorder;

namespace {

constexpr int64_t kT0 = 1'724'779'239'936'775'119;

FrDump SeedDump(int rank, bool hang, bool timing) {
  FrDump d;
  d.version = "2.10";
  d.comm_lib_version = "2.27.3";
  d.pg_config = {{"0", "0", "default_pg", {0, 1}}, {"1", "1", "pp", {0, 1}}};
  d.pg_status = {{"0", 3, timing ? 2 : -1, 2}};
  for (int i = 0; i < 6; ++i) {
    FrEntry e;
    e.record_id = 40 + i;
    const bool p2p = i >= 3 && i < 5;
    e.pg_name = p2p ? "1" : "0";
    e.pg_desc = p2p ? "pp" : "default_pg";
    e.collective_seq_id = p2p ? 0 : 1 + i;
    e.p2p_seq_id = p2p ? i - 2 : 0;
    e.profiling_name = !p2p ? "nccl:all_reduce" : rank == 0 ? "nccl:send 0->1" : "nccl:recv 1<-0";
    if (i == 5) e.profiling_name = "nccl:coalesced";
    e.time_created_ns = kT0 + int64_t{i} * 1'000'000;
    e.input_sizes = {{3, 4}};
    e.output_sizes = {{3, 4}};
    e.input_dtypes = e.output_dtypes = {"Float"};
    const bool done = !(hang && i >= 4);
    e.state = done ? FrState::kCompleted : (timing ? FrState::kStarted : FrState::kScheduled);
    if (done) e.time_discovered_completed_ns = e.time_created_ns + 500;
    if (timing) e.time_discovered_started_ns = e.time_created_ns + 5;
    if (timing && done) e.duration_ms = 0.0004;
    // Stacks sharing their caller's frame: memoized dicts in the pickle, as torch writes them.
    e.frames = std::vector<FrFrame>{{p2p ? "send" : "all_reduce", "distributed_c10d.py", 2707},
                                    {"train_step", "/job/train.py", 41}};
    e.timeout_ms = 600000;
    e.is_p2p = p2p;
    d.entries.push_back(e);
  }
  return d;
}

std::optional<FrDump> Decode(const uint8_t* data, size_t size) {
  PickleLimits limits;
  limits.max_elements = 1 << 16;
  limits.max_string_bytes = 1 << 20;
  std::string error;
  std::optional<PickleValue> tree;
  switch (SniffFrDump(reinterpret_cast<const char*>(data), size)) {
    case FrFormat::kPickle:
      tree = ParsePickle(data, size, limits, &error);
      break;
    case FrFormat::kJson:
      tree = ParseFrJson(std::string_view(reinterpret_cast<const char*>(data), size), &error);
      break;
    case FrFormat::kNone:
      return std::nullopt;
  }
  if (!tree) {
    if (error.empty()) __builtin_trap();  // a rejection must say why
    return std::nullopt;
  }
  std::optional<FrDump> dump = DecodeFrDump(*tree, &error);
  if (!dump && error.empty()) __builtin_trap();
  return dump;
}

hang_detector::RankFile Index(const FrDump& dump, int rank) {
  const FrRecords r =
      RecordsFromFrDump(dump, {"rank" + std::to_string(rank), rank, kT0 + 10'000'000'000});
  if (r.entry_of.size() != r.records.size()) __builtin_trap();
  for (size_t i = 0; i < r.records.size(); ++i) {
    const trace::RecordData& d = r.records[i].data;
    if (i > 0 && r.records[i].index <= r.records[i - 1].index) __builtin_trap();
    const int64_t done = d.t_device_done_ns;
    if (trace::IsPending(done) && done != trace::PendingMarker(r.records[i].index))
      __builtin_trap();
    const int32_t entry = r.entry_of[i];
    const bool attach = d.op == static_cast<uint32_t>(trace::OpType::kProfilerAttach);
    if (attach != (entry < 0) || entry >= static_cast<int64_t>(dump.entries.size()))
      __builtin_trap();
    if (d.op == static_cast<uint32_t>(trace::OpType::kEventDuration)) {
      // Its op is the nearest earlier operation record (a device start may lie between).
      size_t op = i;
      while (op > 0 &&
             !trace::IsCollective(static_cast<trace::OpType>(r.records[op - 1].data.op)) &&
             !trace::IsP2P(static_cast<trace::OpType>(r.records[op - 1].data.op))) {
        --op;
      }
      if (op == 0 || r.records[op - 1].index != d.aux || r.entry_of[op - 1] != entry ||
          r.records[op - 1].data.t_device_done_ns <= 0) {
        __builtin_trap();
      }
    }
  }
  hang_detector::RankFile file;
  hang_detector::RankFileBuilder builder(&file);
  builder.BeginFile(r.info);
  if (!r.records.empty()) builder.Records(r.records.data(), r.records.size());
  builder.EndFile(r.info);
  return file;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::optional<FrDump> dump = Decode(data, size);
  if (!dump) return 0;
  std::vector<hang_detector::RankFile> files;
  files.push_back(Index(SeedDump(0, /*hang=*/true, /*timing=*/false), 0));
  files.push_back(Index(*dump, 1));
  const hang_detector::JobIndex index = hang_detector::JobIndex::FromFiles(std::move(files), {});
  hang_detector::AnalyzeOptions options;
  options.now_wall_ns = kT0 + 20'000'000'000;
  options.job_ended = true;
  // Whatever the dump holds, the correlator answers: a usable analysis with at least one verdict
  // (rank 0's well-formed file is always there).
  const hang_detector::Analysis a = hang_detector::Analyze(index, options);
  if (!a.usable || a.verdicts.empty()) __builtin_trap();
  return 0;
}

extern "C" void FuzzSeeds(std::vector<std::string>* seeds) {
  for (const bool hang : {false, true}) {
    for (const bool timing : {false, true}) {
      seeds->push_back(WritePickle(EncodeFrDump(SeedDump(1, hang, timing))));
      seeds->push_back(EncodeFrDumpJson(SeedDump(1, hang, timing)));
    }
  }
}
