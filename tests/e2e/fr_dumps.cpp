#include "tests/e2e/fr_dumps.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <algorithm>
#include <fstream>

#include "trace/flight_recorder/fr_json.h"
#include "trace/flight_recorder/pickle_writer.h"

namespace ncclscope::testing {

using flight_recorder::FrEntry;
using flight_recorder::FrState;

FrJob::FrJob(int ranks, int64_t t0_ns, const std::string& version, bool timing)
    : t0_ns_(t0_ns), timing_(timing), dumps_(ranks), next_record_id_(ranks, 0) {
  std::vector<int> all(ranks);
  for (int r = 0; r < ranks; ++r) all[r] = r;
  for (flight_recorder::FrDump& d : dumps_) {
    d.version = version;
    d.comm_lib_version = "2.21.5";
    d.pg_config = {{"0", "0", "default_pg", all}};
    d.pg_status = {{"0", -1, -1, -1}};
  }
}

FrEntry& FrJob::Add(int rank, const std::string& profiling_name, int64_t coll_seq, int64_t p2p_seq,
                    FrState state, double at_s) {
  FrEntry e;
  e.record_id = next_record_id_.at(rank)++;
  e.pg_name = "0";
  e.pg_desc = "default_pg";
  e.collective_seq_id = coll_seq;
  e.p2p_seq_id = p2p_seq;
  e.op_id = e.record_id + 1;
  e.profiling_name = profiling_name;
  e.time_created_ns = t0_ns_ + static_cast<int64_t>(at_s * 1e9);
  e.input_sizes = {{1024}};
  e.output_sizes = {{1024}};
  e.input_dtypes = {"Float"};
  e.output_dtypes = {"Float"};
  e.state = state;
  if (state == FrState::kCompleted) {
    e.time_discovered_completed_ns = e.time_created_ns + 5'000'000;
    e.retired = true;
  }
  if (timing_ && state != FrState::kScheduled) {
    e.time_discovered_started_ns = e.time_created_ns + 1'000'000;
    if (state == FrState::kCompleted) e.duration_ms = kDurationMs;
  }
  // The op's own frame, then the training loop's, which every entry shares.
  const std::string op = profiling_name.substr(profiling_name.find(':') + 1);
  e.frames = std::vector<flight_recorder::FrFrame>{
      {op.substr(0, op.find(' ')), "torch/distributed/distributed_c10d.py", 2707},
      {"train_step", "/job/train.py", 41},
      {"<module>", "/job/train.py", 90}};
  e.timeout_ms = 600000;
  e.is_p2p = profiling_name.find("send") != std::string::npos ||
             profiling_name.find("recv") != std::string::npos;
  e.thread_id = "140001";
  e.thread_name = "pt_main_thread";
  flight_recorder::FrDump& d = dumps_.at(rank);
  d.entries.push_back(std::move(e));
  if (!d.entries.back().is_p2p) {
    d.pg_status[0].last_enqueued_collective =
        std::max(d.pg_status[0].last_enqueued_collective, coll_seq);
    if (state == FrState::kCompleted) {
      d.pg_status[0].last_completed_collective =
          std::max(d.pg_status[0].last_completed_collective, coll_seq);
    }
    if (timing_ && state != FrState::kScheduled) {
      d.pg_status[0].last_started_collective =
          std::max(d.pg_status[0].last_started_collective, coll_seq);
    }
  }
  return d.entries.back();
}

void FrJob::Collectives(int first_seq, int last_seq, FrState state, double at_s,
                        const std::vector<int>& ranks) {
  std::vector<int> who = ranks;
  if (who.empty()) {
    for (int r = 0; r < static_cast<int>(dumps_.size()); ++r) who.push_back(r);
  }
  for (int seq = first_seq; seq <= last_seq; ++seq) {
    for (const int r : who) Add(r, "nccl:all_reduce", seq, 0, state, at_s + (seq - first_seq));
  }
}

bool FrJob::Write(const std::string& dir, double dumped_at_s, const std::vector<int>& skip,
                  const std::vector<int>& json) const {
  for (int r = 0; r < static_cast<int>(dumps_.size()); ++r) {
    if (std::find(skip.begin(), skip.end(), r) != skip.end()) continue;
    const std::string path = dir + "/nccl_trace_rank_" + std::to_string(r);
    {
      std::ofstream out(path, std::ios::binary);
      const bool as_json = std::find(json.begin(), json.end(), r) != json.end();
      out << (as_json ? flight_recorder::EncodeFrDumpJson(dumps_[r])
                      : flight_recorder::WritePickle(flight_recorder::EncodeFrDump(dumps_[r])));
      if (!out) {
        ADD_FAILURE() << "cannot write " << path;
        return false;
      }
    }
    const int64_t t = t0_ns_ + static_cast<int64_t>(dumped_at_s * 1e9);
    const timespec times[2] = {{t / 1'000'000'000, t % 1'000'000'000},
                               {t / 1'000'000'000, t % 1'000'000'000}};
    if (utimensat(AT_FDCWD, path.c_str(), times, 0) != 0) {
      ADD_FAILURE() << "cannot set the time of " << path;
      return false;
    }
  }
  return true;
}

}  // namespace ncclscope::testing
