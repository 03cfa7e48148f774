// `ncclscope timeline` (exporters/timeline/): the written Perfetto trace decoded with the project's
// .proto and checked against the records it came from (tracks, slices and their times, flows,
// verdicts, counters, filters, clock bound), the Chrome JSON form against the same job, and the
// golden-free rule that every slice lies inside its rank's recorded interval.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <fstream>
#include <map>
#include <set>
#include <string>

#include "exporters/timeline/chrome_json_writer.h"
#include "exporters/timeline/perfetto_writer.h"
#include "exporters/timeline/timeline_builder.h"
#include "hang_detector/decision/correlator.h"
#include "tests/exporters/snapshot_source.h"
#include "tests/exporters/timeline/decoded_trace.h"
#include "tests/hang_detector/job_builder.h"
#include "tests/trace/temp_dir.h"

namespace ncclscope::testing {
namespace {

namespace tl = exporters::timeline;
using trace::OpType;

constexpr int64_t kMs = 1000000;

class TimelineTest : public ::testing::Test {
 protected:
  // Writes the timeline of `set` as Perfetto protobuf and decodes it.
  DecodedTrace Perfetto(const trace::TraceSet& set, const tl::TimelineOptions& options = {}) {
    source_.set = set;
    summary_ = {};
    tl::PerfettoWriter writer;
    const std::string path = dir_.path() + "/trace.pftrace";
    std::string error;
    EXPECT_TRUE(writer.Open(path, &error)) << error;
    EXPECT_TRUE(tl::WriteTimeline(source_, options, &writer, &summary_, &error)) << error;
    DecodedTrace t = DecodePerfettoFile(path);
    EXPECT_EQ(t.error, "");
    return t;
  }
  nlohmann::json ChromeJson(const trace::TraceSet& set, const tl::TimelineOptions& options = {}) {
    source_.set = set;
    summary_ = {};
    tl::ChromeJsonWriter writer;
    const std::string path = dir_.path() + "/trace.json";
    std::string error;
    EXPECT_TRUE(writer.Open(path, &error)) << error;
    EXPECT_TRUE(tl::WriteTimeline(source_, options, &writer, &summary_, &error)) << error;
    std::ifstream in(path);
    return nlohmann::json::parse(in);
  }
  // The slices of `pid` whose category is `category`, by begin time.
  static std::vector<DecodedEvent> SlicesOf(const DecodedTrace& t, int pid,
                                            const std::string& category) {
    std::vector<DecodedEvent> out;
    for (const DecodedEvent& s : t.slices) {
      if (t.PidOf(s.track) == pid && s.category == category) out.push_back(s);
    }
    std::sort(out.begin(), out.end(),
              [](const DecodedEvent& a, const DecodedEvent& b) { return a.begin_ns < b.begin_ns; });
    return out;
  }

  TempDir dir_;
  SnapshotSource source_;
  tl::TimelineSummary summary_;
};

// A two-rank job: three allreduces (rank 1 late to #2; the profiler saw #3's kernel start on rank
// 0), then a send from rank 0 received by rank 1.
JobBuilder TwoRankJob(uint64_t* world) {
  JobBuilder job(2);
  *world = job.Comm("world", {0, 1});
  for (int r = 0; r < 2; ++r) {
    job.Coll(r, *world, OpType::kAllReduce, 0.1, Done::kCompleted);
    trace::RecordData& second =
        job.Coll(r, *world, OpType::kAllReduce, r == 0 ? 0.2 : 0.25, Done::kCompleted);
    second.t_device_done_ns = second.t_enter_ns + (r == 0 ? 51 : 1) * kMs;  // both at 0.251 s
    job.Coll(r, *world, OpType::kAllReduce, 0.3, Done::kCompleted);
  }
  job.DeviceStart(0, *world, 3, 0.3005);
  job.Send(0, *world, 1, 0.4, Done::kCompleted);
  job.Recv(1, *world, 0, 0.4, Done::kCompleted);
  return job;
}

// What every trace must satisfy, whatever the job: slices of a track nest (DecodedTrace::
// OverlapError), and every slice lies inside its rank's recorded interval.
void ExpectWellFormed(const DecodedTrace& t, const trace::TraceSet& set) {
  EXPECT_EQ(t.OverlapError(), "");
  for (const trace::RingSnapshot& f : set.files) {
    const int64_t offset = f.start_realtime_ns - f.start_monotonic_ns;
    int64_t first = INT64_MAX;
    int64_t last = f.heartbeat_monotonic_ns;
    for (const trace::StoredRecord& r : f.records) {
      first = std::min(first, r.data.t_enter_ns);
      last = std::max({last, r.data.t_exit_ns, r.data.t_device_done_ns});
    }
    for (const DecodedEvent& s : t.slices) {
      if (t.PidOf(s.track) != f.global_rank) continue;
      EXPECT_GE(s.begin_ns, first + offset) << s.name;
      EXPECT_LE(s.end_ns.value_or(s.begin_ns), last + offset) << s.name;
    }
  }
}

TEST_F(TimelineTest, EveryRankGetsAProcessWithItsCallsAndDeviceWork) {
  uint64_t world = 0;
  const trace::TraceSet set = TwoRankJob(&world).Build();
  const DecodedTrace t = Perfetto(set);
  EXPECT_TRUE(t.realtime_clock);
  ExpectWellFormed(t, set);

  std::map<int, std::string> processes;
  for (const auto& [uuid, track] : t.tracks) {
    if (track.is_process) processes[track.pid] = track.name;
  }
  ASSERT_EQ(processes.size(), 2u);
  EXPECT_EQ(processes[0], "rank 0 · node-a · pid 1000");
  EXPECT_EQ(processes[1], "rank 1 · node-a · pid 1001");

  // A host slice per call, at the call's entry and return.
  const std::vector<DecodedEvent> calls = SlicesOf(t, 1, "call");
  ASSERT_EQ(calls.size(), 4u);
  EXPECT_EQ(calls[1].name, "allreduce · world");
  EXPECT_EQ(calls[1].begin_ns, JobBuilder::Wall(0.25));
  EXPECT_EQ(calls[1].end_ns, JobBuilder::Wall(0.25) + 1000);
  EXPECT_EQ(calls[1].args.at("seq"), "2");
  EXPECT_EQ(calls[3].name, "recv · world");

  // Device slices: from the call (or the kernel start the profiler saw) to device completion.
  const std::vector<DecodedEvent> device = SlicesOf(t, 0, "device");
  ASSERT_EQ(device.size(), 4u);
  EXPECT_EQ(device[0].name, "allreduce");
  EXPECT_EQ(device[0].args.at("seq"), "1");
  EXPECT_EQ(device[0].args.at("bytes"), "1024");
  EXPECT_EQ(device[0].args.at("dtype"), "float32");
  EXPECT_EQ(device[0].begin_ns, JobBuilder::Wall(0.1));
  EXPECT_EQ(device[0].end_ns, JobBuilder::Wall(0.1) + kMs);
  EXPECT_EQ(device[1].end_ns, JobBuilder::Wall(0.251));  // rank 0 waited for rank 1
  EXPECT_EQ(device[2].args.at("seq"), "3");
  EXPECT_EQ(device[2].begin_ns, JobBuilder::Wall(0.3005));  // its kernel start marker
  EXPECT_EQ(device[3].name, "send");
  EXPECT_EQ(device[3].args.at("peer"), "1");
  EXPECT_EQ(
      t.tracks.at(device[0].track).name, "world · stream 0x" + [&] {
        char b[32];
        std::snprintf(b, sizeof b, "%llx", static_cast<unsigned long long>(0x1000 + world % 97));
        return std::string(b);
      }());
}

TEST_F(TimelineTest, ArrowsJoinACollectiveAcrossRanksAndASendWithItsReceive) {
  uint64_t world = 0;
  const DecodedTrace t = Perfetto(TwoRankJob(&world).Build());
  std::map<uint64_t, std::set<std::pair<int, std::string>>> by_flow;
  for (const DecodedEvent& s : t.slices) {
    for (uint64_t f : s.flows) {
      by_flow[f].insert({t.PidOf(s.track), s.name + " #" + s.args.at("seq")});
    }
  }
  for (uint64_t seq = 1; seq <= 3; ++seq) {
    const std::string name = "allreduce #" + std::to_string(seq);
    EXPECT_EQ(by_flow[tl::CollectiveFlowId(world, seq)],
              (std::set<std::pair<int, std::string>>{{0, name}, {1, name}}));
  }
  EXPECT_EQ(by_flow[tl::P2pFlowId(world, 0, 1, 1)],
            (std::set<std::pair<int, std::string>>{{0, "send #1"}, {1, "recv #1"}}));
  EXPECT_EQ(by_flow.size(), 4u);  // nothing else is joined
}

TEST_F(TimelineTest, AHungCollectiveIsOpenAndWhatQueuedBehindItIsNotDrawnAsRunning) {
  JobBuilder job(2);
  const uint64_t world = job.Comm("world", {0, 1});
  job.Coll(0, world, OpType::kAllReduce, 0.1, Done::kCompleted);
  job.Coll(1, world, OpType::kAllReduce, 0.1, Done::kCompleted);
  job.Coll(0, world, OpType::kAllReduce, 0.2, Done::kPending);  // rank 1 never calls #2
  job.Coll(0, world, OpType::kAllReduce, 0.3, Done::kPending);  // behind it on the stream
  job.HeartbeatAll(5.0);
  const trace::TraceSet set = job.Build();
  const DecodedTrace t = Perfetto(set);
  const std::vector<DecodedEvent> device = SlicesOf(t, 0, "device");
  ASSERT_EQ(device.size(), 2u);
  EXPECT_TRUE(device[0].end_ns.has_value());
  EXPECT_EQ(device[1].args.at("seq"), "2");
  EXPECT_FALSE(device[1].end_ns.has_value());
  EXPECT_EQ(SlicesOf(t, 0, "call").size(), 3u);  // every call is still drawn on the host
  EXPECT_EQ(summary_.open_slices, 1u);
  // Operations in flight on rank 0: #1 issued and done, then #2 and #3 issued, never done.
  std::vector<std::pair<int64_t, int64_t>> in_flight;
  for (const DecodedTrace::CounterValue& c : t.counters) {
    if (t.PidOf(c.track) != 0) continue;
    EXPECT_EQ(t.tracks.at(c.track).name, "operations in flight");
    in_flight.emplace_back(c.ts_ns, c.value);
  }
  std::sort(in_flight.begin(), in_flight.end());
  EXPECT_EQ(in_flight, (std::vector<std::pair<int64_t, int64_t>>{{JobBuilder::Wall(0.1), 1},
                                                                 {JobBuilder::Wall(0.1) + kMs, 0},
                                                                 {JobBuilder::Wall(0.2), 1},
                                                                 {JobBuilder::Wall(0.3), 2}}));
  ExpectWellFormed(t, set);
}

TEST_F(TimelineTest, TheVerdictIsMarkedOnTheCulpritsTrackAtItsEvidence) {
  JobBuilder job(2);
  const uint64_t world = job.Comm("world", {0, 1});
  job.Coll(0, world, OpType::kAllReduce, 0.1, Done::kCompleted);
  job.Coll(1, world, OpType::kAllReduce, 0.1, Done::kCompleted);
  job.Coll(0, world, OpType::kAllReduce, 0.2, Done::kPending);
  job.HeartbeatAll(120.0);
  const trace::TraceSet set = job.Build();
  FakeProbe probe;
  hang_detector::AnalyzeOptions ao;
  ao.now_wall_ns = JobBuilder::Wall(120.0);
  ao.probe = &probe;
  const hang_detector::Analysis analysis = hang_detector::Analyze(set, ao);
  ASSERT_FALSE(analysis.verdicts.empty());
  const hang_detector::Verdict& v = analysis.verdicts.front();
  ASSERT_EQ(v.culprits, std::vector<int>{1}) << v.summary;

  tl::TimelineOptions options;
  options.analysis = &analysis;
  const DecodedTrace t = Perfetto(set, options);
  std::vector<DecodedEvent> marks;
  for (const DecodedEvent& i : t.instants) {
    if (i.category == "verdict") marks.push_back(i);
  }
  ASSERT_EQ(marks.size(), 1u);
  EXPECT_EQ(t.PidOf(marks[0].track), 1);
  EXPECT_EQ(t.tracks.at(marks[0].track).name, "ncclscope verdicts");
  EXPECT_NE(marks[0].name.find(hang_detector::VerdictClassName(v.cls)), std::string::npos);
  EXPECT_EQ(marks[0].args.at("summary"), v.summary);
  EXPECT_EQ(summary_.verdict_marks, 1u);
}

TEST_F(TimelineTest, RanksCommAndWindowSelectWhatIsWritten) {
  JobBuilder job(4);
  const uint64_t world = job.Comm("world", {0, 1, 2, 3});
  const uint64_t tp = job.Comm("tp", {0, 1});
  for (int r = 0; r < 4; ++r) {
    job.Coll(r, world, OpType::kAllReduce, 1.0, Done::kCompleted);
    job.Coll(r, world, OpType::kAllReduce, 3.0, Done::kCompleted);
  }
  for (int r = 0; r < 2; ++r) job.Coll(r, tp, OpType::kAllGather, 2.0, Done::kCompleted);
  const trace::TraceSet set = job.Build();

  tl::TimelineOptions ranks;
  std::string error;
  ASSERT_TRUE(tl::ParseRankList("1-2", &ranks.ranks, &error)) << error;
  const DecodedTrace by_rank = Perfetto(set, ranks);
  std::set<int> pids;
  for (const auto& [uuid, track] : by_rank.tracks) {
    if (track.is_process) pids.insert(track.pid);
  }
  EXPECT_EQ(pids, (std::set<int>{1, 2}));

  tl::TimelineOptions comm;
  comm.comm = "tp";
  const DecodedTrace by_comm = Perfetto(set, comm);
  for (const DecodedEvent& s : by_comm.slices) EXPECT_EQ(by_comm.CommOf(s), "tp") << s.name;
  EXPECT_EQ(summary_.ranks_written, 2u);  // ranks 2 and 3 are not in tp
  EXPECT_EQ(summary_.host_slices, 2u);

  // The origin is the files' creation (job time 0): a window of 1.5-2.5 s holds the allgather.
  tl::TimelineOptions window;
  window.from_s = 1.5;
  window.to_s = 2.5;
  const DecodedTrace by_time = Perfetto(set, window);
  for (const DecodedEvent& s : by_time.slices) EXPECT_EQ(by_time.CommOf(s), "tp") << s.name;
  EXPECT_EQ(summary_.host_slices, 2u);
  EXPECT_EQ(summary_.device_slices, 2u);

  // Around tp's #1 (the allgather at 2 s, done 1 ms later) with 0.5 s either side: the same.
  tl::TimelineOptions around;
  around.around_comm = "tp";
  around.around_seq = 1;
  around.around_margin_s = 0.5;
  const DecodedTrace by_op = Perfetto(set, around);
  for (const DecodedEvent& s : by_op.slices) EXPECT_EQ(by_op.CommOf(s), "tp") << s.name;
  EXPECT_EQ(summary_.host_slices, 2u);
  around.around_margin_s = 1.5;  // now the world allreduces at 1 s and 3 s are inside too
  Perfetto(set, around);
  EXPECT_EQ(summary_.host_slices, 10u);

  tl::TimelineOptions nothing;
  nothing.comm = "pp";
  source_.set = set;
  tl::PerfettoWriter writer;
  ASSERT_TRUE(writer.Open(dir_.path() + "/none.pftrace", &error));
  EXPECT_FALSE(tl::WriteTimeline(source_, nothing, &writer, &summary_, &error));
  EXPECT_NE(error.find("'pp'"), std::string::npos) << error;
}

TEST(RankList, ParsesRangesAndNamesWhatIsWrong) {
  std::vector<std::pair<int, int>> ranges;
  std::string error;
  ASSERT_TRUE(tl::ParseRankList("0-63,128,200-255", &ranges, &error));
  EXPECT_EQ(ranges, (std::vector<std::pair<int, int>>{{0, 63}, {128, 128}, {200, 255}}));
  for (const char* bad : {"", "a", "5-3", "1,,2", "-1", "1-", "3-x"}) {
    EXPECT_FALSE(tl::ParseRankList(bad, &ranges, &error)) << bad;
    EXPECT_NE(error.find("is not a rank"), std::string::npos) << error;
  }
}

TEST_F(TimelineTest, TheClockBoundBracketsASkewedHost) {
  // Rank 1's host clock runs 5 ms ahead. Both enter together and complete 1 ms later, so its
  // offset lies in [enter_1 - done_0, done_1 - enter_0] = [4 ms, 6 ms]: bound 6 ms.
  JobBuilder job(2);
  const uint64_t world = job.Comm("world", {0, 1});
  for (int i = 0; i < 3; ++i) {
    job.Coll(0, world, OpType::kAllReduce, 0.1 * (i + 1), Done::kCompleted);
    job.Coll(1, world, OpType::kAllReduce, 0.1 * (i + 1), Done::kCompleted);
  }
  job.Host(1, "node-b");
  trace::TraceSet set = job.Build();
  set.files[1].start_realtime_ns += 5 * kMs;
  const DecodedTrace t = Perfetto(set);
  EXPECT_EQ(summary_.clock_reference_host, "node-a");
  EXPECT_EQ(summary_.clock_hosts, 2);
  EXPECT_EQ(summary_.clock_bounded_hosts, 1);
  EXPECT_EQ(summary_.clock_bound_ns, 6 * kMs);
  bool stated = false;
  for (const DecodedEvent& i : t.instants) {
    if (i.name == "trace metadata") {
      stated = true;
      EXPECT_EQ(i.args.at("clock_bound_ns"), std::to_string(6 * kMs));
      EXPECT_EQ(i.args.at("clock_reference_host"), "node-a");
    }
  }
  EXPECT_TRUE(stated);
}

TEST_F(TimelineTest, ChromeJsonHoldsTheSameSlicesAndOneArrowChainPerCollective) {
  uint64_t world = 0;
  const trace::TraceSet set = TwoRankJob(&world).Build();
  const DecodedTrace proto = Perfetto(set);
  const nlohmann::json j = ChromeJson(set);
  ASSERT_TRUE(j.contains("traceEvents"));
  size_t complete = 0;
  std::map<std::string, std::vector<std::string>> flow_phases;
  std::map<int, std::string> process_names;
  for (const nlohmann::json& e : j["traceEvents"]) {
    const std::string ph = e["ph"];
    if (ph == "X") ++complete;
    if (ph == "s" || ph == "t" || ph == "f") flow_phases[e["id"]].push_back(ph);
    if (ph == "M" && e["name"] == "process_name") process_names[e["pid"]] = e["args"]["name"];
  }
  EXPECT_EQ(complete, proto.slices.size());
  EXPECT_EQ(flow_phases.size(), 4u);
  for (const auto& [id, phases] : flow_phases) {
    EXPECT_EQ(phases, (std::vector<std::string>{"s", "f"})) << id;
  }
  EXPECT_EQ(process_names[1], "rank 1 · node-a · pid 1001");
  EXPECT_EQ(j["metadata"]["origin_ns"], JobBuilder::Wall(0));
  // Times are microseconds from that origin.
  bool found = false;
  for (const nlohmann::json& e : j["traceEvents"]) {
    if (e["ph"] == "X" && e["name"] == "allreduce" && e["args"]["seq"] == 1 && e["pid"] == 0) {
      EXPECT_NEAR(e["ts"].get<double>(), 100000.0, 1e-6);
      EXPECT_NEAR(e["dur"].get<double>(), 1000.0, 1e-6);
      found = true;
    }
  }
  EXPECT_TRUE(found);
}

TEST_F(TimelineTest, AnUnwritableOutputIsAnErrorAndLeavesNoFile) {
  tl::PerfettoWriter writer;
  std::string error;
  EXPECT_FALSE(writer.Open(dir_.path() + "/missing/trace.pftrace", &error));
  EXPECT_NE(error.find("missing/trace.pftrace.partial"), std::string::npos) << error;

  // A run that fails (nothing to read) leaves neither the file nor its partial copy.
  const std::string path = dir_.path() + "/empty.pftrace";
  {
    tl::PerfettoWriter w;
    ASSERT_TRUE(w.Open(path, &error));
    source_.set = trace::TraceSet{};
    EXPECT_FALSE(tl::WriteTimeline(source_, {}, &w, &summary_, &error));
  }
  EXPECT_NE(access(path.c_str(), F_OK), 0);
  EXPECT_NE(access((path + ".partial").c_str(), F_OK), 0);
}

TEST_F(TimelineTest, TheTraceIsPrivateToItsOwner) {
  uint64_t world = 0;
  Perfetto(TwoRankJob(&world).Build());
  struct stat st {};
  ASSERT_EQ(stat((dir_.path() + "/trace.pftrace").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
}

}  // namespace
}  // namespace ncclscope::testing
