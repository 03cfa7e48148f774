// A directory of PyTorch Flight Recorder dumps handed to `analyze`, `stats` and `timeline` as a
// user would after a job died with TORCH_NCCL_DUMP_ON_TIMEOUT: the verdict names the rank that
// broke the job, a healthy set of dumps says healthy, and what cannot be read exits 3 saying why.
// The dumps are hand-written for the corners of the format (FlightRecorder.hpp's Entry,
// FlightRecorderDetail.hpp's dump, torchfrtrace's matching): a rank that never joined, one that
// issued another op, a missing dump, buffers that dropped different amounts, coalesced p2p, mixed
// versions.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <fstream>
#include <string>
#include <vector>

#include "tests/e2e/cli.h"
#include "tests/e2e/e2e_env.h"
#include "tests/e2e/fr_dumps.h"
#include "tests/e2e/scratch_dir.h"
#include "tests/e2e/subprocess.h"

namespace ncclscope::testing {
namespace {

using flight_recorder::FrState;

constexpr int64_t kT0 = 1'760'000'000'000'000'000;
// torch dumps once the 10-minute timeout fired (TORCH_NCCL_DUMP_ON_TIMEOUT, default timeout 10
// minutes): every wait is long by then.
constexpr double kDumpedAt = 700;

ProcessResult RunCli(const std::vector<std::string>& args) {
  std::vector<std::string> argv = {Cli()};
  argv.insert(argv.end(), args.begin(), args.end());
  return RunProcess(argv, {}, 60);
}

nlohmann::json AnalyzeDumps(const std::string& dir, int expect_exit) {
  const ProcessResult r = RunCli({"analyze", dir, "--json"});
  EXPECT_EQ(r.exit_code, expect_exit) << r.out << r.err;
  return nlohmann::json::parse(r.out, nullptr, false);
}

TEST(CliFrImport, HealthyDumpsAreHealthy) {
  ScratchDir dir;
  FrJob job(4, kT0);
  job.Collectives(1, 20, FrState::kCompleted, 0);
  ASSERT_TRUE(job.Write(dir.path(), kDumpedAt));
  const nlohmann::json a = AnalyzeDumps(dir.path(), 0);
  ASSERT_TRUE(a.is_object());
  EXPECT_EQ(a["stage"], "healthy");
  EXPECT_EQ(a["input"]["missing_rank_count"], 0);
}

TEST(CliFrImport, AnOnDemandDumpWithOperationsInFlightIsHealthy) {
  // TORCH_NCCL_DEBUG_INFO_PIPE_FILE or _dump_nccl_trace() on a running job: the newest
  // collective is still in flight on every rank, 20 ms old.
  ScratchDir dir;
  FrJob job(4, kT0);
  job.Collectives(1, 20, FrState::kCompleted, 0);
  job.Collectives(21, 21, FrState::kScheduled, 20);
  ASSERT_TRUE(job.Write(dir.path(), 20.02));
  EXPECT_EQ(AnalyzeDumps(dir.path(), 0)["stage"], "healthy");
}

TEST(CliFrImport, AnOnDemandDumpDuringACheckpointIsASuspectNotAHang) {
  // Rank 0 saves a checkpoint for 40 s while the others wait in #21; someone dumps FR then. The
  // job is fine: a dump is a snapshot, not the job's end, so the wait must last the confirmation
  // time (60 s at least) before it is called a hang, as for ring files of a live job.
  ScratchDir dir;
  FrJob job(4, kT0);
  job.Collectives(1, 20, FrState::kCompleted, 0);
  job.Collectives(21, 21, FrState::kScheduled, 20, {1, 2, 3});
  ASSERT_TRUE(job.Write(dir.path(), 60));
  const nlohmann::json a = AnalyzeDumps(dir.path(), 4);
  EXPECT_EQ(a["stage"], "suspect");
  ASSERT_FALSE(a["verdicts"].empty());
  EXPECT_EQ(a["verdicts"][0]["confirmed"], false);
  EXPECT_EQ(a["verdicts"][0]["culprits"], nlohmann::json::array({0}));
}

TEST(CliFrImport, ARankThatNeverJoinedIsTheCulprit) {
  ScratchDir dir;
  FrJob job(4, kT0);
  job.Collectives(1, 20, FrState::kCompleted, 0);
  job.Collectives(21, 21, FrState::kScheduled, 20, {0, 1, 2});  // rank 3 never called #21
  ASSERT_TRUE(job.Write(dir.path(), kDumpedAt));
  const nlohmann::json a = AnalyzeDumps(dir.path(), 2);
  ASSERT_TRUE(a.is_object());
  ASSERT_FALSE(a["verdicts"].empty()) << a.dump(2);
  const nlohmann::json& v = a["verdicts"][0];
  EXPECT_EQ(v["class"], "missing") << v.dump(2);
  EXPECT_EQ(v["seq"], 21);
  EXPECT_EQ(v["culprits"], nlohmann::json::array({3}));
  EXPECT_EQ(v["comm_name"], "default_pg") << v.dump(2);
}

// Every evidence line names the FR entry by its record_id, however many records reading the dump
// made up (with timing: an attach per group, a device start and a device time per op).
std::vector<int64_t> EvidenceRecordIds(const nlohmann::json& verdict, int rank) {
  std::vector<int64_t> ids;
  for (const nlohmann::json& e : verdict["evidence"]) {
    if (e["rank"] == rank && e.contains("fr_record_id")) ids.push_back(e["fr_record_id"]);
  }
  return ids;
}

TEST(CliFrImport, EvidenceNamesEntriesByTheirRecordIdWithTimingOn) {
  ScratchDir dir;
  FrJob job(4, kT0, "2.10", /*timing=*/true);
  job.Collectives(1, 20, FrState::kCompleted, 0);             // record_ids 0-19
  job.Collectives(21, 21, FrState::kStarted, 20, {0, 1, 2});  // record_id 20
  ASSERT_TRUE(job.Write(dir.path(), kDumpedAt));
  const nlohmann::json a = AnalyzeDumps(dir.path(), 2);
  ASSERT_FALSE(a["verdicts"].empty()) << a.dump(2);
  const nlohmann::json& v = a["verdicts"][0];
  EXPECT_EQ(v["culprits"], nlohmann::json::array({3})) << v.dump(2);
  EXPECT_EQ(EvidenceRecordIds(v, 0), std::vector<int64_t>{20}) << v.dump(2);
  EXPECT_EQ(EvidenceRecordIds(v, 3), std::vector<int64_t>{19}) << v.dump(2);
  const ProcessResult text = RunCli({"analyze", dir.path()});
  EXPECT_NE(text.out.find("rank 0 record_id 20:"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("rank 3 record_id 19:"), std::string::npos) << text.out;
}

TEST(CliFrImport, EvidenceNamesEntriesByTheirRecordIdInAnOnlyActiveDump) {
  // TORCH_INCLUDE_ONLY_ACTIVE=1 (getCollectiveTrace's onlyActive): completed entries are left
  // out, so the dump starts at the waiting op; with timing on, pg_status still says what started.
  ScratchDir dir;
  FrJob job(4, kT0, "2.10", /*timing=*/true);
  job.Collectives(1, 20, FrState::kCompleted, 0);
  job.Collectives(21, 21, FrState::kScheduled, 20, {0, 1, 2});
  job.Collectives(21, 21, FrState::kStarted, 20, {3});
  job.Add(3, "nccl:all_reduce", 22, 0, FrState::kScheduled, 21);  // rank 3 went on alone
  for (int r = 0; r < 4; ++r) {
    std::erase_if(job.dump(r).entries,
                  [](const flight_recorder::FrEntry& e) { return e.state == FrState::kCompleted; });
  }
  ASSERT_TRUE(job.Write(dir.path(), kDumpedAt));
  const nlohmann::json a = AnalyzeDumps(dir.path(), 2);
  ASSERT_FALSE(a["verdicts"].empty()) << a.dump(2);
  bool cited = false;
  for (const nlohmann::json& v : a["verdicts"]) {
    for (int r = 0; r < 3; ++r) {
      for (const int64_t id : EvidenceRecordIds(v, r)) {
        EXPECT_EQ(id, 20) << v.dump(2);
        cited = true;
      }
    }
  }
  EXPECT_TRUE(cited) << a.dump(2);
}

TEST(CliFrImport, JsonAndPickleDumpsOfOneJobAreReadTogether) {
  // _dump_nccl_trace_json from some ranks (a control-plane scrape), pickles from the others.
  ScratchDir dir;
  FrJob job(4, kT0);
  job.Collectives(1, 20, FrState::kCompleted, 0);
  job.Collectives(21, 21, FrState::kScheduled, 20, {0, 2, 3});
  ASSERT_TRUE(job.Write(dir.path(), kDumpedAt, /*skip=*/{}, /*json=*/{0, 1}));
  const nlohmann::json a = AnalyzeDumps(dir.path(), 2);
  ASSERT_FALSE(a["verdicts"].empty()) << a.dump(2);
  EXPECT_EQ(a["verdicts"][0]["class"], "missing");
  EXPECT_EQ(a["verdicts"][0]["culprits"], nlohmann::json::array({1}));
  EXPECT_EQ(a["input"]["files"], 4);
}

TEST(CliFrImport, ARankThatIssuedAnotherOperationIsADesync) {
  ScratchDir dir;
  FrJob job(4, kT0);
  job.Collectives(1, 20, FrState::kCompleted, 0);
  job.Collectives(21, 21, FrState::kScheduled, 20, {0, 1, 3});
  job.Add(2, "nccl:_all_gather_base", 21, 0, FrState::kScheduled, 20);
  ASSERT_TRUE(job.Write(dir.path(), kDumpedAt));
  const nlohmann::json a = AnalyzeDumps(dir.path(), 2);
  ASSERT_FALSE(a["verdicts"].empty()) << a.dump(2);
  EXPECT_EQ(a["verdicts"][0]["class"], "desync");
  EXPECT_EQ(a["verdicts"][0]["culprits"], nlohmann::json::array({2}));
}

TEST(CliFrImport, TimesAreSaidToCountFromTheNewestDumpNotAHeartbeat) {
  ScratchDir dir;
  FrJob job(4, kT0);
  job.Collectives(1, 20, FrState::kCompleted, 0);
  job.Collectives(21, 21, FrState::kScheduled, 20, {0, 1, 2});
  ASSERT_TRUE(job.Write(dir.path(), kDumpedAt));
  const ProcessResult r = RunCli({"analyze", dir.path()});
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_EQ(r.out.find("heartbeat"), std::string::npos) << r.out;  // FR dumps have none
  EXPECT_NE(r.out.find("times are relative to when the last rank wrote its file (the newest "
                       "file's modification time)"),
            std::string::npos)
      << r.out;
}

TEST(CliFrImport, AnUnreadableDumpIsSaidToBeUnreadableNotMissing) {
  ScratchDir dir;
  FrJob job(4, kT0);
  job.Collectives(1, 20, FrState::kCompleted, 0);
  job.Collectives(21, 21, FrState::kScheduled, 20, {0, 1, 2});
  ASSERT_TRUE(job.Write(dir.path(), kDumpedAt, /*skip=*/{3}));
  std::ofstream(dir / "nccl_trace_rank_3") << R"({"version": "2.10", "pg_config": )";  // cut off
  const nlohmann::json a = AnalyzeDumps(dir.path(), 2);
  EXPECT_EQ(a["input"]["missing_rank_count"], 0) << a["input"].dump(2);
  EXPECT_EQ(a["input"]["unreadable_ranks"], nlohmann::json::array({3})) << a["input"].dump(2);
  const ProcessResult r = RunCli({"analyze", dir.path()});
  EXPECT_NE(r.out.find("unreadable file for ranks 3"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("no file for ranks"), std::string::npos) << r.out;
}

TEST(CliFrImport, AMissingDumpIsNamedAndTheOthersAreNotBlamed) {
  // The culprit's dump is often the one missing (#196968: a rank in teardown never dumps).
  ScratchDir dir;
  FrJob job(4, kT0);
  job.Collectives(1, 20, FrState::kCompleted, 0);
  job.Collectives(21, 21, FrState::kScheduled, 20, {0, 1, 2});
  ASSERT_TRUE(job.Write(dir.path(), kDumpedAt, /*skip=*/{3}));
  const nlohmann::json a = AnalyzeDumps(dir.path(), 2);
  EXPECT_EQ(a["input"]["missing_rank_count"], 1);
  ASSERT_FALSE(a["verdicts"].empty()) << a.dump(2);
  for (const nlohmann::json& v : a["verdicts"]) {
    for (const nlohmann::json& c : v["culprits"]) EXPECT_EQ(c, 3) << v.dump(2);
  }
}

TEST(CliFrImport, BuffersThatDroppedDifferentAmountsAndMixedVersionsStillMatch) {
  // Rank 0 kept its last 5 entries, rank 1 its last 12, rank 2 was dumped by an older torch.
  ScratchDir dir;
  FrJob job(3, kT0);
  job.Collectives(1, 30, FrState::kCompleted, 0);
  job.Collectives(31, 31, FrState::kScheduled, 30, {0, 2});
  auto& r0 = job.dump(0).entries;
  r0.erase(r0.begin(), r0.end() - 5);
  auto& r1 = job.dump(1).entries;
  r1.erase(r1.begin(), r1.end() - 12);
  job.dump(2).version = "2.4";
  job.dump(2).comm_lib_version.clear();
  ASSERT_TRUE(job.Write(dir.path(), kDumpedAt));
  const nlohmann::json a = AnalyzeDumps(dir.path(), 2);
  ASSERT_FALSE(a["verdicts"].empty()) << a.dump(2);
  EXPECT_EQ(a["verdicts"][0]["seq"], 31);
  EXPECT_EQ(a["verdicts"][0]["culprits"], nlohmann::json::array({1}));
}

TEST(CliFrImport, CoalescedPointToPointCompletesThroughItsClosingEntry) {
  // A pipeline step with batch_isend_irecv: the sends and receives stay "scheduled" (null events,
  // #137969) while the group completed. Reading them as waiting would cry wolf.
  ScratchDir dir;
  FrJob job(2, kT0);
  for (int step = 1; step <= 5; ++step) {
    job.Add(0, "nccl:send 0->1", step, step, FrState::kScheduled, step);
    job.Add(0, "nccl:coalesced", step, step, FrState::kCompleted, step).is_p2p = true;
    job.Add(1, "nccl:recv 1<-0", step, step, FrState::kScheduled, step);
    job.Add(1, "nccl:coalesced", step, step, FrState::kCompleted, step).is_p2p = true;
  }
  ASSERT_TRUE(job.Write(dir.path(), kDumpedAt));
  EXPECT_EQ(AnalyzeDumps(dir.path(), 0)["stage"], "healthy");
}

TEST(CliFrImport, AReceiveWithoutItsSendNamesTheSender) {
  ScratchDir dir;
  FrJob job(2, kT0);
  job.Add(0, "nccl:send 0->1", 0, 1, FrState::kCompleted, 1);
  job.Add(1, "nccl:recv 1<-0", 0, 1, FrState::kCompleted, 1);
  job.Add(1, "nccl:recv 1<-0", 0, 2, FrState::kScheduled, 2);  // rank 0 never sent the second
  ASSERT_TRUE(job.Write(dir.path(), kDumpedAt));
  const nlohmann::json a = AnalyzeDumps(dir.path(), 2);
  ASSERT_FALSE(a["verdicts"].empty()) << a.dump(2);
  EXPECT_EQ(a["verdicts"][0]["culprits"], nlohmann::json::array({0})) << a.dump(2);
}

TEST(CliFrImport, AReceiveWithoutItsSendShowsTorchsP2pSeqIdToo) {
  // torch numbers every p2p op of a group on a rank (ProcessGroupNCCL's seqP2P_, bumped in
  // pointToPoint): rank 1's second receive from rank 0 is its 3rd p2p op, after a send to 2.
  // ncclscope numbers per peer: it is receive #2 from rank 0.
  ScratchDir dir;
  FrJob job(3, kT0);
  job.Add(0, "nccl:send 0->1", 0, 1, FrState::kCompleted, 1);
  job.Add(1, "nccl:recv 1<-0", 0, 1, FrState::kCompleted, 1);
  job.Add(1, "nccl:send 1->2", 0, 2, FrState::kCompleted, 2);
  job.Add(2, "nccl:recv 2<-1", 0, 1, FrState::kCompleted, 2);
  job.Add(1, "nccl:recv 1<-0", 0, 3, FrState::kScheduled, 3);  // rank 0 never sent it
  ASSERT_TRUE(job.Write(dir.path(), kDumpedAt));
  const nlohmann::json a = AnalyzeDumps(dir.path(), 2);
  ASSERT_FALSE(a["verdicts"].empty()) << a.dump(2);
  const nlohmann::json& v = a["verdicts"][0];
  EXPECT_EQ(v["op"], "recv") << v.dump(2);
  EXPECT_EQ(v["seq"], 2) << v.dump(2);
  EXPECT_EQ(v["fr_p2p_seq_id"], 3) << v.dump(2);
  EXPECT_EQ(v["fr_p2p_rank"], 1) << v.dump(2);
  EXPECT_NE(v["headline"].get<std::string>().find("recv #2 (p2p_seq_id 3 on rank 1)"),
            std::string::npos)
      << v.dump(2);
}

TEST(CliFrImport, StatsTimeOpsByTorchsCudaEventsWhereTheDumpsHaveThem) {
  // time_discovered_completed_ns is when the watchdog noticed (5 ms after the call here);
  // duration_ms is the device time (3.5 ms).
  for (const bool timing : {false, true}) {
    ScratchDir dir;
    FrJob job(2, kT0, "2.10", timing);
    job.Collectives(1, 10, FrState::kCompleted, 0);
    ASSERT_TRUE(job.Write(dir.path(), kDumpedAt));
    const ProcessResult stats = RunCli({"stats", dir.path(), "--json"});
    ASSERT_EQ(stats.exit_code, 0) << stats.err;
    const nlohmann::json t = nlohmann::json::parse(stats.out);
    ASSERT_EQ(t["rows"].size(), 1u) << t.dump(2);
    const nlohmann::json& row = t["rows"][0];
    EXPECT_EQ(row["timing"], timing ? "event" : "host") << row.dump(2);
    EXPECT_EQ(row["event_calls"], timing ? 20 : 0) << row.dump(2);
    EXPECT_NEAR(row["p50_s"].get<double>(), timing ? FrJob::kDurationMs * 1e-3 : 5e-3, 1e-6)
        << row.dump(2);
    const ProcessResult text = RunCli({"stats", dir.path()});
    EXPECT_NE(text.out.find("time_discovered_completed_ns, when torch's watchdog noticed"),
              std::string::npos)
        << text.out;
  }
}

TEST(CliFrImport, StatsAndTimelineReadDumpsToo) {
  ScratchDir dir;
  FrJob job(2, kT0);
  job.Collectives(1, 10, FrState::kCompleted, 0);
  ASSERT_TRUE(job.Write(dir.path(), kDumpedAt));
  const ProcessResult stats = RunCli({"stats", dir.path(), "--json"});
  ASSERT_EQ(stats.exit_code, 0) << stats.err;
  const nlohmann::json t = nlohmann::json::parse(stats.out);
  EXPECT_EQ(t["files"], 2);
  ASSERT_EQ(t["rows"].size(), 1u) << t.dump(2);
  EXPECT_EQ(t["rows"][0]["op"], "allreduce");
  EXPECT_EQ(t["rows"][0]["calls"], 20);  // each rank's calls, as for ring files
  EXPECT_EQ(t["rows"][0]["comm"], "default_pg");

  const std::string out = dir / "job.json";
  const ProcessResult tl = RunCli({"timeline", dir.path(), "-o", out, "--format", "chrome-json"});
  ASSERT_EQ(tl.exit_code, 0) << tl.err;
  EXPECT_NE(tl.out.find("2 ranks, 20 calls"), std::string::npos) << tl.out;
}

TEST(CliFrImport, RingFilesBesideDumpsWinAndTheDumpsAreSaidToBeLeftAside) {
  // A user copies torch's dumps next to ncclscope's trace: the ring files hold more.
  ScratchDir dir;
  const ProcessResult job = RunSim("healthy.json", 4, dir.path(), 120);
  ASSERT_EQ(job.exit_code, 0) << job.err;
  FrJob dumps(4, kT0);
  dumps.Collectives(1, 20, FrState::kCompleted, 0);
  dumps.Collectives(21, 21, FrState::kScheduled, 20, {0, 1, 2});  // a hang, if it were read
  ASSERT_TRUE(dumps.Write(dir.path(), kDumpedAt));
  const ProcessResult r = RunCli({"analyze", dir.path(), "--job-ended"});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.err.find("4 Flight Recorder dump(s) beside the ring files are not read"),
            std::string::npos)
      << r.err;
  EXPECT_NE(r.out.find("4 ring file(s)"), std::string::npos) << r.out;
}

TEST(CliFrImport, WhatCannotBeReadExitsThreeSayingWhy) {
  ScratchDir dir;
  {
    std::ofstream(dir / "nccl_trace_rank_0") << R"({"version": "3.0", "pg_config": {}})";
    std::ofstream(dir / "notes.txt") << "not a dump";
  }
  const ProcessResult r = RunCli({"analyze", dir.path()});
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_NE(r.err.find("nccl_trace_rank_0"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("3.0"), std::string::npos) << r.err;

  ScratchDir empty;
  { std::ofstream(empty / "notes.txt") << "not a dump"; }
  const ProcessResult e = RunCli({"analyze", empty.path()});
  EXPECT_EQ(e.exit_code, 3);
  EXPECT_NE(e.err.find("Flight Recorder"), std::string::npos) << e.err;
}

}  // namespace
}  // namespace ncclscope::testing
