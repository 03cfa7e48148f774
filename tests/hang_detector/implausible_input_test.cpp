// Headers and records that claim what no job does (a world of two million ranks, a sequence number
// of 2^40, a communicator of 2^31-1 ranks) cost memory and output in proportion to the files
// present, never to the claim, and the input report says what was ignored. An analysis with no
// file at all renders without a verdict to dereference.
#include <gtest/gtest.h>

#include <climits>
#include <string>

#include "hang_detector/ingest/job_index.h"
#include "hang_detector/verdicts/verdict_json.h"
#include "hang_detector/verdicts/verdict_text.h"
#include "tests/hang_detector/analyze_helpers.h"

namespace ncclscope::testing {
namespace {

using hang_detector::JobIndex;

// Two ranks of world allreduces, #1 and #2 completed.
JobBuilder TwoRanks(uint64_t* world) {
  JobBuilder job(2);
  *world = job.Comm("world", {0, 1});
  for (int r = 0; r < 2; ++r) {
    job.Coll(r, *world, OpType::kAllReduce, 0.1, Done::kCompleted);
    job.Coll(r, *world, OpType::kAllReduce, 0.2, Done::kCompleted);
  }
  return job;
}

trace::TraceSet WithWorldSizes(const JobBuilder& job, int rank0, int rank1) {
  trace::TraceSet set = job.Build();
  set.files[0].world_size = rank0;
  set.files[1].world_size = rank1;
  return set;
}

bool HasNote(const std::vector<std::string>& notes, const std::string& text) {
  for (const std::string& n : notes) {
    if (n.find(text) != std::string::npos) return true;
  }
  return false;
}

TEST(ImplausibleInput, AWorldOfMillionsOfRanksIsIgnoredWithANote) {
  uint64_t world;
  const JobBuilder job = TwoRanks(&world);
  for (const int claimed : {2000000, INT_MAX}) {
    const JobIndex index(WithWorldSizes(job, claimed, claimed));
    EXPECT_EQ(index.world_size(), -1) << claimed;
    EXPECT_TRUE(index.missing_ranks().empty()) << claimed;
    EXPECT_TRUE(HasNote(index.notes(), "2 file(s) claim an implausible world size (" +
                                           std::to_string(claimed) + " in rank0.ring"))
        << claimed;
    EXPECT_TRUE(HasNote(index.notes(), "not all ranks were seen")) << claimed;
  }
}

TEST(ImplausibleInput, APlausibleClaimWinsOverAnImplausibleOne) {
  uint64_t world;
  const JobBuilder job = TwoRanks(&world);
  const JobIndex index(WithWorldSizes(job, INT_MAX, 4));
  EXPECT_EQ(index.world_size(), 4);
  EXPECT_EQ(index.missing_ranks(), (std::vector<int>{2, 3}));
  EXPECT_TRUE(HasNote(index.notes(), "1 file(s) claim an implausible world size (2147483647"));
  EXPECT_FALSE(HasNote(index.notes(), "not all ranks were seen"));
}

// A large but possible world: the JSON lists the ranks without a file as ranges, so the document
// stays small however many there are.
TEST(ImplausibleInput, MissingRanksOfALargeWorldAreRangesInTheJson) {
  uint64_t world;
  const JobBuilder job = TwoRanks(&world);
  trace::TraceSet set = WithWorldSizes(job, 1000000, 1000000);
  set.files[1].global_rank = 7;
  const Analysis a = hang_detector::Analyze(set, {});
  EXPECT_EQ(a.input.world_size, 1000000);
  EXPECT_EQ(a.input.missing_ranks.size(), 999998u);
  const std::string json = hang_detector::RenderJson(a, 0);
  EXPECT_LT(json.size(), 4096u);
  EXPECT_NE(json.find("\"missing_rank_count\":999998,\"missing_rank_ranges\":[[1,6],[8,999999]]"),
            std::string::npos)
      << json;
}

TEST(ImplausibleInput, ASequenceNumberBeyondTheRingIsSkippedNotAllocated) {
  uint64_t world;
  JobBuilder job = TwoRanks(&world);
  job.Coll(0, world, OpType::kAllReduce, 0.3, Done::kPending).seq = uint64_t{1} << 40;
  job.Coll(0, world, OpType::kAllReduce, 0.4, Done::kPending).seq = UINT64_MAX;
  const JobIndex index(job.Build());
  const hang_detector::CommModel* comm = index.FindComm(world);
  ASSERT_NE(comm, nullptr);
  for (const hang_detector::CollLane& lane : comm->lanes) {
    EXPECT_EQ(lane.first_seq, 1u);
    EXPECT_EQ(lane.pos.size(), 2u) << "rank file " << lane.file;
  }
  EXPECT_TRUE(HasNote(index.notes(), "2 record(s) with an impossible sequence number"));
}

// Records lost between two collectives leave a hole of as many numbers as they took slots.
TEST(ImplausibleInput, AHoleOfDroppedRecordsIsStillAHole) {
  uint64_t world;
  JobBuilder job = TwoRanks(&world);
  trace::TraceSet set = job.Build();
  auto& records = set.files[0].records;
  trace::StoredRecord later = records.back();
  later.index += 3;     // three slots dropped ...
  later.data.seq += 3;  // ... which held collectives #3 to #5
  records.push_back(later);
  const JobIndex index(set);
  const hang_detector::CommModel* comm = index.FindComm(world);
  ASSERT_NE(comm, nullptr);
  const hang_detector::CollLane& lane = comm->lanes[0];
  ASSERT_EQ(lane.pos.size(), 5u);
  EXPECT_EQ(lane.pos[2], hang_detector::kNoRecord);
  EXPECT_TRUE(index.notes().empty());
}

TEST(ImplausibleInput, ACommunicatorOfBillionsOfRanksIsOfUnknownSize) {
  JobBuilder job(2);
  const uint64_t child = 0xabc;
  job.InitInCall(0, child, INT_MAX, 0, 0.5);
  job.HeartbeatAll(10);
  trace::TraceSet set = job.Build();
  set.files[0].comms.push_back({});
  set.files[0].comms.back().id = 0xdef;
  set.files[0].comms.back().nranks = INT_MAX;
  const JobIndex index(set);
  ASSERT_EQ(index.inits().size(), 1u);
  EXPECT_EQ(index.inits()[0].nranks, -1);
  ASSERT_NE(index.FindComm(0xdef), nullptr);
  EXPECT_EQ(index.FindComm(0xdef)->nranks, -1);
  // And the analysis of the stuck init stays short.
  const Analysis a = AnalyzeWith(job, 10, ConfirmAtOnce());
  EXPECT_LT(hang_detector::RenderJson(a, 0).size(), 16384u);
}

TEST(ImplausibleInput, NoFileAtAllRendersAsUnusable) {
  const Analysis a = hang_detector::Analyze(trace::TraceSet{}, {});
  ASSERT_FALSE(a.usable);
  ASSERT_TRUE(a.verdicts.empty());
  EXPECT_EQ(hang_detector::ExitCode(a), 3);
  for (const bool verbose : {false, true}) {
    const std::string text = hang_detector::RenderText(a, verbose);
    EXPECT_EQ(text.rfind("UNUSABLE: no readable ring file\n", 0), 0u) << text;
  }
  EXPECT_NE(hang_detector::RenderJson(a, 0).find("\"usable\":false"), std::string::npos);
}

}  // namespace
}  // namespace ncclscope::testing
