// Ring files of synthetic jobs (JobBuilder) turned into Flight Recorder dumps: the process groups,
// sequence ids, coalesced groups, states and times, sizes and the buffer a user of torch's
// analyzer would read.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tests/hang_detector/job_builder.h"
#include "trace/flight_recorder/ring_to_fr.h"

namespace ncclscope::exporters::fr {
namespace {

using flight_recorder::FrDump;
using flight_recorder::FrEntry;
using flight_recorder::FrState;
using testing::Done;
using testing::JobBuilder;
using trace::OpType;

std::vector<const trace::RingSnapshot*> Files(const trace::TraceSet& set) {
  std::vector<const trace::RingSnapshot*> files;
  for (const auto& f : set.files) files.push_back(&f);
  return files;
}

FrJobDumps Convert(const trace::TraceSet& set, const std::string& version = "2.10",
                   size_t buffer = kDefaultFrBufferSize) {
  FrExportOptions o;
  o.version = version;
  o.buffer_size = buffer;
  return DumpsOfJob(Files(set), o);
}

// Takes away the recorded name of communicator `id` on every rank (a comm created without one).
void Unname(trace::TraceSet* set, uint64_t id) {
  for (auto& f : set->files) {
    for (auto& c : f.comms) {
      if (c.id == id) c.name.clear();
    }
  }
}

std::vector<std::string> Names(const FrDump& d) {
  std::vector<std::string> out;
  for (const FrEntry& e : d.entries) out.push_back(e.profiling_name);
  return out;
}

void InGroup(trace::RecordData& r, uint64_t group) {
  r.group_id = group;
  r.flags |= trace::kFlagInGroup;
}

TEST(RingToFrTest, ProcessGroupsAreNumberedJobWideWithMembersInCommRankOrder) {
  JobBuilder job(4);
  const uint64_t world = job.Comm("world", {0, 1, 2, 3});
  job.Comm("tp0", {0, 1});
  const uint64_t tp1 = job.Comm("tp1", {2, 3});
  const uint64_t odd = job.Comm("odd", {3, 1});  // comm rank 0 is global rank 3
  job.Coll(2, tp1, OpType::kAllReduce, 1.0, Done::kCompleted);
  trace::TraceSet set = job.Build();
  Unname(&set, world);
  Unname(&set, odd);

  const FrJobDumps dumps = Convert(set);
  ASSERT_EQ(dumps.ranks.size(), 4u);
  EXPECT_TRUE(dumps.notes.empty());

  // Rank 1 is in world, tp0 and odd: the groups keep the job order, "odd" (first member rank 1)
  // before tp1 (first member rank 2).
  const FrDump& r1 = dumps.ranks[1].dump;
  ASSERT_EQ(r1.pg_config.size(), 3u);
  EXPECT_EQ(r1.pg_config[0].name, "0");
  EXPECT_EQ(r1.pg_config[0].desc, "default_pg");
  EXPECT_EQ(r1.pg_config[0].ranks, (std::vector<int>{0, 1, 2, 3}));
  EXPECT_EQ(r1.pg_config[1].name, "1");
  EXPECT_EQ(r1.pg_config[1].desc, "tp0");
  EXPECT_EQ(r1.pg_config[2].name, "2");
  EXPECT_EQ(r1.pg_config[2].desc, "pg2");
  EXPECT_EQ(r1.pg_config[2].ranks, (std::vector<int>{3, 1}));

  // Rank 2 sees world and tp1 only; tp1 is the job's group "3" and its own pg_id 1.
  const FrDump& r2 = dumps.ranks[2].dump;
  ASSERT_EQ(r2.pg_config.size(), 2u);
  EXPECT_EQ(r2.pg_config[1].name, "3");
  EXPECT_EQ(r2.pg_config[1].desc, "tp1");
  EXPECT_EQ(r2.pg_config[1].ranks, (std::vector<int>{2, 3}));
  ASSERT_EQ(r2.pg_status.size(), 2u);
  EXPECT_EQ(r2.pg_status[1].pg_id, "1");

  // An entry on tp1 names the job-wide group and the rank's own pg_id.
  ASSERT_EQ(r2.entries.size(), 1u);
  EXPECT_EQ(r2.entries[0].pg_name, "3");
  EXPECT_EQ(r2.entries[0].pg_desc, "tp1");
  EXPECT_EQ(r2.entries[0].pg_id, 1);
}

TEST(RingToFrTest, SequenceIdsCountCollectivesAndPointToPointApart) {
  JobBuilder job(2);
  const uint64_t world = job.Comm("world", {0, 1});
  job.Coll(0, world, OpType::kAllReduce, 1.0, Done::kCompleted);
  job.Coll(0, world, OpType::kAllReduce, 2.0, Done::kCompleted);
  job.Send(0, world, 1, 3.0, Done::kCompleted);
  job.Recv(0, world, 1, 4.0, Done::kCompleted);
  job.Coll(0, world, OpType::kBroadcast, 5.0, Done::kCompleted, 256, testing::kFloat32, 0);
  const FrDump d = Convert(job.Build()).ranks[0].dump;

  EXPECT_EQ(Names(d),
            (std::vector<std::string>{"nccl:all_reduce", "nccl:all_reduce", "nccl:send 0->1",
                                      "nccl:recv 0<-1", "nccl:broadcast"}));
  std::vector<int64_t> coll, p2p, op, rec;
  for (const FrEntry& e : d.entries) {
    coll.push_back(e.collective_seq_id);
    p2p.push_back(e.p2p_seq_id);
    op.push_back(e.op_id);
    rec.push_back(e.record_id);
  }
  EXPECT_EQ(coll, (std::vector<int64_t>{1, 2, 2, 2, 3}));
  EXPECT_EQ(p2p, (std::vector<int64_t>{0, 0, 1, 2, 2}));
  EXPECT_EQ(op, (std::vector<int64_t>{1, 2, 3, 4, 5}));
  EXPECT_EQ(rec, (std::vector<int64_t>{0, 1, 2, 3, 4}));
  EXPECT_FALSE(d.entries[0].is_p2p);
  EXPECT_TRUE(d.entries[2].is_p2p);
  ASSERT_EQ(d.pg_status.size(), 1u);
  EXPECT_EQ(d.pg_status[0].last_enqueued_collective, 3);
  EXPECT_EQ(d.pg_status[0].last_completed_collective, 3);
  EXPECT_EQ(d.pg_status[0].last_started_collective, -1);  // no device start: torch without timing
}

TEST(RingToFrTest, SendAndRecvNameGroupLocalRanks) {
  JobBuilder job(4);
  const uint64_t pair = job.Comm("pp", {3, 1});
  job.Send(1, pair, 0, 1.0, Done::kCompleted);  // comm rank 1 sends to comm rank 0 (global 3)
  job.Recv(3, pair, 1, 1.0, Done::kCompleted);
  const FrJobDumps dumps = Convert(job.Build());
  EXPECT_EQ(Names(dumps.ranks[1].dump), (std::vector<std::string>{"nccl:send 1->0"}));
  EXPECT_EQ(Names(dumps.ranks[3].dump), (std::vector<std::string>{"nccl:recv 0<-1"}));
}

// Rank 0: a group of two allreduces, an allgather, a group of a send and a receive.
trace::TraceSet GroupedJob() {
  JobBuilder job(2);
  const uint64_t world = job.Comm("world", {0, 1});
  InGroup(job.Coll(0, world, OpType::kAllReduce, 1.0, Done::kCompleted), 7);
  InGroup(job.Coll(0, world, OpType::kAllReduce, 1.1, Done::kCompleted), 7);
  job.Coll(0, world, OpType::kAllGather, 2.0, Done::kCompleted);
  InGroup(job.Send(0, world, 1, 3.0, Done::kCompleted), 8);
  InGroup(job.Recv(0, world, 1, 3.1, Done::kPending), 8);
  return job.Build();
}

TEST(RingToFrTest, CoalescedGroupsCountOnceAndCloseWithACoalescedEntry) {
  const trace::TraceSet set = GroupedJob();
  const FrDump d = Convert(set).ranks[0].dump;
  ASSERT_EQ(Names(d), (std::vector<std::string>{
                          "nccl:all_reduce", "nccl:all_reduce", "nccl:coalesced", "nccl:all_gather",
                          "nccl:send 0->1", "nccl:recv 0<-1", "nccl:coalesced"}));
  std::vector<int64_t> coll, p2p, op;
  for (const FrEntry& e : d.entries) {
    coll.push_back(e.collective_seq_id);
    p2p.push_back(e.p2p_seq_id);
    op.push_back(e.op_id);
  }
  EXPECT_EQ(coll, (std::vector<int64_t>{1, 1, 1, 2, 2, 2, 2}));
  EXPECT_EQ(p2p, (std::vector<int64_t>{0, 0, 0, 0, 1, 1, 1}));
  EXPECT_EQ(op, (std::vector<int64_t>{1, 2, 2, 3, 4, 5, 5}));

  // Per-op entries of a group keep torch's null events: scheduled, no times.
  for (size_t i : {0u, 1u, 4u, 5u}) {
    EXPECT_EQ(d.entries[i].state, FrState::kScheduled) << i;
    EXPECT_FALSE(d.entries[i].time_discovered_completed_ns.has_value()) << i;
  }
  // The closing entries carry the group's outcome, no sizes.
  const FrEntry& close_coll = d.entries[2];
  EXPECT_EQ(close_coll.state, FrState::kCompleted);
  EXPECT_TRUE(close_coll.retired);
  EXPECT_FALSE(close_coll.is_p2p);
  EXPECT_TRUE(close_coll.input_sizes.empty());
  EXPECT_EQ(close_coll.time_created_ns, JobBuilder::Wall(1.1));
  EXPECT_EQ(close_coll.time_discovered_completed_ns, JobBuilder::Wall(1.1) + 1000000);
  const FrEntry& close_p2p = d.entries[6];
  EXPECT_TRUE(close_p2p.is_p2p);
  EXPECT_EQ(close_p2p.state, FrState::kScheduled);  // its receive never completed
  EXPECT_EQ(d.pg_status[0].last_enqueued_collective, 2);
  EXPECT_EQ(d.pg_status[0].last_completed_collective, 2);
}

TEST(RingToFrTest, BeforeVersion27GroupedCollectivesShowOnlyTheClosingEntry) {
  const trace::TraceSet set = GroupedJob();
  for (const char* v : {"2.2", "2.4"}) {
    const FrDump d = Convert(set, v).ranks[0].dump;
    EXPECT_EQ(d.version, v);
    EXPECT_EQ(Names(d),
              (std::vector<std::string>{"nccl:coalesced", "nccl:all_gather", "nccl:send 0->1",
                                        "nccl:recv 0<-1", "nccl:coalesced"}))
        << v;
    EXPECT_EQ(d.entries[0].collective_seq_id, 1) << v;
    EXPECT_EQ(d.entries[1].collective_seq_id, 2) << v;
    EXPECT_FALSE(d.entries[0].thread_id.has_value()) << v;
  }
  const FrDump d27 = Convert(set, "2.7").ranks[0].dump;
  EXPECT_EQ(d27.entries.size(), 7u);
  EXPECT_FALSE(d27.entries[0].thread_name.has_value());
  const FrDump d210 = Convert(set, "2.10").ranks[0].dump;
  EXPECT_EQ(d210.entries[0].thread_name, "pt_main_thread");
}

TEST(RingToFrTest, StatesAndTimesFollowCompletionAndDeviceStarts) {
  JobBuilder job(2);
  const uint64_t world = job.Comm("world", {0, 1});
  job.ProfilerAttach(0, world, 0.5);
  job.Coll(0, world, OpType::kAllReduce, 1.0, Done::kCompleted);  // #1 completed, started
  job.DeviceStart(0, world, 1, 1.0005);
  job.Coll(0, world, OpType::kAllReduce, 2.0, Done::kUntracked);  // #2: #3 completed later
  job.Coll(0, world, OpType::kAllReduce, 3.0, Done::kCompleted);  // #3 completed, no start seen
  job.Coll(0, world, OpType::kAllReduce, 4.0, Done::kPending);    // #4 started
  job.DeviceStart(0, world, 4, 4.2);
  job.Coll(0, world, OpType::kAllReduce, 5.0, Done::kPending);    // #5 scheduled
  job.Coll(0, world, OpType::kAllReduce, 6.0, Done::kUntracked);  // #6: nothing after it
  job.Send(0, world, 1, 7.0, Done::kPending);                     // started (p2p start)
  job.P2pDeviceStart(0, world, 1, 1, /*send=*/true, 7.5);
  const FrDump d = Convert(job.Build()).ranks[0].dump;
  ASSERT_EQ(d.entries.size(), 7u);

  const FrEntry& e1 = d.entries[0];
  EXPECT_EQ(e1.state, FrState::kCompleted);
  EXPECT_TRUE(e1.retired);
  EXPECT_EQ(e1.time_created_ns, JobBuilder::Wall(1.0));
  EXPECT_EQ(e1.time_discovered_started_ns, JobBuilder::Wall(1.0005));
  EXPECT_EQ(e1.time_discovered_completed_ns, JobBuilder::Wall(1.0) + 1000000);
  ASSERT_TRUE(e1.duration_ms.has_value());
  EXPECT_NEAR(*e1.duration_ms, 0.5, 1e-9);

  const FrEntry& e2 = d.entries[1];
  EXPECT_EQ(e2.state, FrState::kCompleted);
  EXPECT_EQ(e2.time_discovered_completed_ns, JobBuilder::Wall(3.0) + 1000000);
  EXPECT_FALSE(e2.duration_ms.has_value());

  EXPECT_EQ(d.entries[2].state, FrState::kCompleted);
  EXPECT_FALSE(d.entries[2].time_discovered_started_ns.has_value());

  const FrEntry& e4 = d.entries[3];
  EXPECT_EQ(e4.state, FrState::kStarted);
  EXPECT_FALSE(e4.retired);
  EXPECT_EQ(e4.time_discovered_started_ns, JobBuilder::Wall(4.2));
  EXPECT_FALSE(e4.time_discovered_completed_ns.has_value());

  EXPECT_EQ(d.entries[4].state, FrState::kScheduled);
  EXPECT_FALSE(d.entries[4].time_discovered_started_ns.has_value());
  EXPECT_EQ(d.entries[5].state, FrState::kScheduled);
  EXPECT_EQ(d.entries[6].state, FrState::kStarted);
  EXPECT_EQ(d.entries[6].time_discovered_started_ns, JobBuilder::Wall(7.5));
  for (const FrEntry& e : d.entries) EXPECT_EQ(e.timeout_ms, 600000);

  EXPECT_EQ(d.pg_status[0].last_enqueued_collective, 6);
  EXPECT_EQ(d.pg_status[0].last_completed_collective, 3);
  EXPECT_EQ(d.pg_status[0].last_started_collective, 4);
}

TEST(RingToFrTest, SizesAndDtypesAreThoseOfTheTorchCall) {
  JobBuilder job(4);
  const uint64_t world = job.Comm("world", {0, 1, 2, 3});
  job.Coll(0, world, OpType::kAllGather, 1.0, Done::kCompleted, 5);
  job.Coll(0, world, OpType::kReduceScatter, 2.0, Done::kCompleted, 5, testing::kFloat16);
  job.Coll(0, world, OpType::kAlltoAll, 3.0, Done::kCompleted, 5);
  job.Coll(0, world, OpType::kAllReduce, 4.0, Done::kCompleted, 5);
  const FrDump d = Convert(job.Build()).ranks[0].dump;
  ASSERT_EQ(d.entries.size(), 4u);
  using Shape = std::vector<std::vector<int64_t>>;
  EXPECT_EQ(d.entries[0].input_sizes, (Shape{{5}}));
  EXPECT_EQ(d.entries[0].output_sizes, (Shape{{20}}));
  EXPECT_EQ(d.entries[0].input_dtypes, (std::vector<std::string>{"Float"}));
  EXPECT_EQ(d.entries[1].input_sizes, (Shape{{20}}));
  EXPECT_EQ(d.entries[1].output_sizes, (Shape{{5}}));
  EXPECT_EQ(d.entries[1].output_dtypes, (std::vector<std::string>{"Half"}));
  EXPECT_EQ(d.entries[2].input_sizes, (Shape{{20}}));
  EXPECT_EQ(d.entries[2].output_sizes, (Shape{{20}}));
  EXPECT_EQ(d.entries[3].output_sizes, (Shape{{5}}));
}

TEST(RingToFrTest, TheBufferKeepsTheNewestEntriesWithTheirRecordIds) {
  JobBuilder job(2);
  const uint64_t world = job.Comm("world", {0, 1});
  for (int i = 0; i < 10; ++i) job.Coll(0, world, OpType::kAllReduce, i, Done::kCompleted);
  const FrDump d = Convert(job.Build(), "2.10", 4).ranks[0].dump;
  ASSERT_EQ(d.entries.size(), 4u);
  EXPECT_EQ(d.entries.front().record_id, 6);
  EXPECT_EQ(d.entries.front().collective_seq_id, 7);
  EXPECT_EQ(d.entries.back().record_id, 9);
  EXPECT_EQ(d.pg_status[0].last_enqueued_collective, 10);
  EXPECT_TRUE(Convert(job.Build(), "2.10", 0).ranks[0].dump.entries.empty());
}

TEST(RingToFrTest, AWrappedRingCountsCollectivesFromItsOldestRecordSeq) {
  JobBuilder job(2);
  const uint64_t world = job.Comm("world", {0, 1});
  for (int r = 0; r < 2; ++r) {
    for (int i = 0; i < 6; ++i) job.Coll(r, world, OpType::kAllReduce, i, Done::kCompleted);
  }
  job.Wrap(0, 2);  // rank 0 kept #5 and #6 only
  const FrJobDumps dumps = Convert(job.Build());
  const FrDump& r0 = dumps.ranks[0].dump;
  ASSERT_EQ(r0.entries.size(), 2u);
  EXPECT_EQ(r0.entries[0].collective_seq_id, 5);
  EXPECT_EQ(r0.entries[0].record_id, 0);
  EXPECT_EQ(dumps.ranks[1].dump.entries[4].collective_seq_id, 5);
}

TEST(RingToFrTest, CommLibVersionReadsBothNcclVersionCodes) {
  EXPECT_EQ(CommLibVersion(22809), "2.28.9");
  EXPECT_EQ(CommLibVersion(21903), "2.19.3");
  EXPECT_EQ(CommLibVersion(2804), "2.8.4");
  EXPECT_EQ(CommLibVersion(0), "");
  JobBuilder job(1);
  job.Comm("world", {0});
  trace::TraceSet set = job.Build();
  set.files[0].nccl_version = 22809;
  EXPECT_EQ(Convert(set).ranks[0].dump.comm_lib_version, "2.28.9");
}

TEST(RingToFrTest, ANameThatIsNotUtf8IsRepairedSoPythonCanReadTheDump) {
  JobBuilder job(2);
  const uint64_t world = job.Comm("world", {0, 1});
  trace::TraceSet set = job.Build();
  for (auto& f : set.files) {
    for (auto& c : f.comms) {
      if (c.id == world) c.name = "tp\xC3x\xFF";  // a cut character, a byte no UTF-8 has
    }
  }
  EXPECT_EQ(Convert(set).ranks[1].dump.pg_config[0].desc, "tp\xEF\xBF\xBDx\xEF\xBF\xBD");
}

TEST(RingToFrTest, MissingMembersAndRanklessFilesAreNoted) {
  JobBuilder job(3);
  job.Comm("world", {0, 1, 2});
  job.RemoveFile(2);
  trace::TraceSet set = job.Build();
  set.files.push_back(set.files[0]);
  set.files.back().global_rank = -1;
  set.files.back().path = "lost.ring";
  const FrJobDumps dumps = Convert(set);
  ASSERT_EQ(dumps.ranks.size(), 2u);
  ASSERT_EQ(dumps.notes.size(), 2u);
  EXPECT_NE(dumps.notes[0].find("lost.ring"), std::string::npos) << dumps.notes[0];
  EXPECT_NE(dumps.notes[1].find("1 of 3 members have no ring file"), std::string::npos)
      << dumps.notes[1];
  EXPECT_EQ(dumps.ranks[0].dump.pg_config[0].ranks, (std::vector<int>{0, 1}));
}

}  // namespace
}  // namespace ncclscope::exporters::fr
