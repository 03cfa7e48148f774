// Two sources of a job view that claim one host name or one rank
// (exporters/multinode/source_clashes.h): exporters started without their node's name must be told
// apart and say so, with the value to set; a rank two sources hold from different processes is
// counted once, from one source, and the input report says which was left out and why. The job view
// still names the culprit.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "exporters/multinode/digest_codec.h"
#include "exporters/multinode/digest_job.h"
#include "exporters/multinode/source_clashes.h"
#include "hang_detector/decision/correlator.h"
#include "tests/hang_detector/job_builder.h"

namespace ncclscope::testing {
namespace {

namespace hd = hang_detector;
using exporters::AssembleFetchedJob;
using exporters::DigestJob;
using exporters::FetchedDigest;
using exporters::LocalFiles;
using exporters::SourceFacts;
using exporters::SourceProblem;
using exporters::WriterClaim;
using trace::OpType;

// An 8-rank job over two nodes (ranks 0-3 on node0, 4-7 on node1) in which rank 5 never issues
// the second AllReduce that every other rank waits in: the culprit is on the second node.
JobBuilder StuckAtRank5(double heartbeat_t = 10) {
  JobBuilder job(8);
  const uint64_t world = job.Comm("world", {0, 1, 2, 3, 4, 5, 6, 7});
  for (int r = 0; r < 8; ++r) {
    job.Host(r, r < 4 ? "node0" : "node1");
    job.Coll(r, world, OpType::kAllReduce, 1.0, Done::kCompleted);
    if (r != 5) job.Coll(r, world, OpType::kAllReduce, 2.0, Done::kPending);
  }
  job.HeartbeatAll(heartbeat_t);
  return job;
}

// The files of `ranks`, compacted.
std::vector<hd::RankFile> Ranks(const JobBuilder& job, const std::vector<int>& ranks) {
  std::vector<hd::RankFile> all = CompactFiles(job.Build());
  std::vector<hd::RankFile> out;
  for (hd::RankFile& f : all) {
    if (std::find(ranks.begin(), ranks.end(), f.rank) != ranks.end()) out.push_back(std::move(f));
  }
  return out;
}

// A digest of `files` as an exporter calling itself `host` with id `instance` serves it, fetched
// from `source` at job time 10.
FetchedDigest Digest(const std::vector<hd::RankFile>& files, const std::string& host,
                     uint64_t instance, const std::string& source) {
  std::vector<exporters::DigestRank> ranks;
  for (const hd::RankFile& f : files) ranks.push_back({&f, hd::ProcessState::kUnknown, 0});
  exporters::DigestHeader h;
  h.host = host;
  h.instance = instance;
  h.built_at_ns = h.produced_at_ns = JobBuilder::Wall(10);
  FetchedDigest d;
  d.source = source;
  d.ok = true;
  d.bytes = exporters::EncodeNodeDigest(h, ranks);
  d.received_at_ns = JobBuilder::Wall(10);
  return d;
}

hd::Analysis AnalyzeJob(const DigestJob& job) {
  hd::AnalyzeOptions o;
  o.now_wall_ns = JobBuilder::Wall(10);
  return hd::Analyze(*job.index, o);
}

std::vector<std::string> Lines(const std::vector<SourceProblem>& problems) {
  std::vector<std::string> out;
  for (const SourceProblem& p : problems) out.push_back(p.line);
  return out;
}

bool HasNote(const hd::Analysis& a, const std::string& part) {
  return std::any_of(a.input.notes.begin(), a.input.notes.end(),
                     [&](const std::string& n) { return n.find(part) != std::string::npos; });
}

TEST(SourceClashes, APeerCallingItselfByThisExportersNameIsAnotherNodeAndNamesTheFix) {
  const JobBuilder job = StuckAtRank5();
  // Both exporters run on one machine without NCCLSCOPE_HOST: both are "buildbox", while their
  // ring files name node0 and node1.
  LocalFiles local;
  local.files = Ranks(job, {0, 1, 2, 3});
  local.facts = {"this node's ring files", "buildbox", 11, false, {0, 1, 2, 3}, {"node0"}};
  DigestJob dj;
  AssembleFetchedJob(std::move(local),
                     {Digest(Ranks(job, {4, 5, 6, 7}), "buildbox", 22, "http://b:1/digest")}, "",
                     size_t{64} << 20, &dj);
  ASSERT_TRUE(dj.index.has_value());
  EXPECT_EQ(dj.per_source[0].instance, 22u);
  ASSERT_EQ(dj.problems.size(), 1u) << ::testing::PrintToString(Lines(dj.problems));
  const std::string& line = dj.problems[0].line;
  EXPECT_EQ(line.rfind("host name clash: http://b:1/digest is another exporter calling itself "
                       "'buildbox' like this one (it holds ranks 4-7, this node ranks 0-3)",
                       0),
            0u)
      << line;
  EXPECT_NE(line.find("start this one with NCCLSCOPE_HOST=node0"), std::string::npos) << line;
  // Nothing of the peer is lost: every rank is seen, and the culprit is the one on the peer.
  const hd::Analysis a = AnalyzeJob(dj);
  EXPECT_EQ(a.input.ranks_seen, 8);
  ASSERT_FALSE(a.verdicts.empty());
  EXPECT_EQ(a.verdicts[0].culprits, std::vector<int>{5});
  EXPECT_TRUE(HasNote(a, "host name clash: http://b:1/digest")) << "in the input report";
}

TEST(SourceClashes, OnlyAnotherInstanceWithThisNodesNameClashes) {
  // This exporter reached through its own address too (IPv4 and IPv6 of one pod), a producer
  // without an id (`ncclscope digest` of an older build), and two peers sharing a name that is
  // not this node's (they say so themselves): nothing to say here.
  std::vector<SourceFacts> facts = {{"self", "h", 7, true, {0}, {}},
                                    {"a", "h", 7, false, {0}, {}},
                                    {"b", "h", 0, false, {4}, {}},
                                    {"c", "g", 5, false, {8}, {}},
                                    {"d", "g", 6, false, {12}, {}}};
  EXPECT_TRUE(exporters::FindHostClashes(facts).empty());
  // Another instance calling itself "h", reached at two addresses: one problem.
  facts.push_back({"e", "h", 9, false, {16}, {}});
  facts.push_back({"f", "h", 9, false, {16}, {}});
  const std::vector<SourceProblem> p = exporters::FindHostClashes(facts);
  ASSERT_EQ(p.size(), 1u);
  EXPECT_EQ(p[0].line.rfind("host name clash: e is another exporter calling itself 'h' like this "
                            "one (it holds rank 16, this node rank 0)",
                            0),
            0u)
      << p[0].line;
  EXPECT_EQ(exporters::FindHostClashes(facts)[0].key, p[0].key) << "the same problem, same key";
  // Without an id of its own (analyze's local files) nothing is this node's name.
  facts[0].instance = 0;
  EXPECT_TRUE(exporters::FindHostClashes(facts).empty());
}

TEST(SourceClashes, WhenTheRingFilesNameThisHostTheFixIsEachNodesOwnName) {
  // Pods named alike: the job's ring files carry the clashing name too.
  const std::vector<SourceProblem> p = exporters::FindHostClashes(
      {{"self", "pod", 1, true, {0, 1}, {"pod"}}, {"http://x/digest", "pod", 2, false, {2}, {}}});
  ASSERT_EQ(p.size(), 1u);
  EXPECT_NE(p[0].line.find("set NCCLSCOPE_HOST to each node's own name for the job and its "
                           "exporter"),
            std::string::npos)
      << p[0].line;
}

TEST(SourceClashes, ARankTwoSourcesHoldFromOtherProcessesIsCountedOnceAndSaid) {
  // Two runs under one job id: both put ranks 0-3 on a node, each node's exporter serves its
  // own. The correlator must not count a rank twice.
  JobBuilder a = StuckAtRank5();
  JobBuilder b = StuckAtRank5();
  for (int r = 0; r < 4; ++r) b.Host(r, "other");
  DigestJob dj;
  AssembleFetchedJob({},
                     {Digest(Ranks(a, {0, 1, 2, 3}), "node0", 1, "http://a/digest"),
                      Digest(Ranks(b, {0, 1, 2, 3}), "other", 2, "http://o/digest"),
                      Digest(Ranks(a, {4, 5, 6, 7}), "node1", 3, "http://n/digest")},
                     "", size_t{64} << 20, &dj);
  ASSERT_TRUE(dj.index.has_value());
  EXPECT_EQ(dj.index->files().size(), 8u) << "ranks 0-3 once";
  for (const hd::RankFile& f : dj.index->files()) {
    if (f.rank < 4) {
      EXPECT_EQ(f.snap->host, "node0") << "kept from the first by host name";
    }
  }
  ASSERT_EQ(dj.problems.size(), 1u) << ::testing::PrintToString(Lines(dj.problems));
  EXPECT_EQ(dj.problems[0].line,
            "rank clash: ranks 0-3 come from other processes in http://o/digest (host other) "
            "than in http://a/digest (host node0): kept http://a/digest's (the first by host "
            "name), left the other out; two runs under one job id (give each its own "
            "NCCLSCOPE_JOB_ID) or an earlier run's ring files still in a node's directory "
            "(remove them)");
  const hd::Analysis a8 = AnalyzeJob(dj);
  EXPECT_EQ(a8.input.ranks_seen, 8);
  EXPECT_EQ(a8.input.files, 8);
  EXPECT_FALSE(HasNote(a8, "several files claim the same rank"));
  EXPECT_TRUE(HasNote(a8, "rank clash: ranks 0-3"));
  ASSERT_FALSE(a8.verdicts.empty());
  EXPECT_EQ(a8.verdicts[0].culprits, std::vector<int>{5});
}

TEST(SourceClashes, TheLocalFilesWinAClashAndAStaleCopyLosesToTheCurrentOne) {
  const JobBuilder live = StuckAtRank5(40);
  JobBuilder old = StuckAtRank5(2);  // its processes stopped 38 s before the others' heartbeat
  for (int r = 0; r < 8; ++r) old.Host(r, "aaa");
  {
    LocalFiles local;
    local.files = Ranks(live, {4, 5, 6, 7});
    local.facts.label = "ring files of D";
    DigestJob dj;
    AssembleFetchedJob(std::move(local),
                       {Digest(Ranks(live, {0, 1, 2, 3}), "node0", 1, "http://a/digest"),
                        Digest(Ranks(old, {4, 5}), "aaa", 2, "http://old/digest")},
                       "", size_t{64} << 20, &dj);
    ASSERT_EQ(dj.problems.size(), 1u) << ::testing::PrintToString(Lines(dj.problems));
    EXPECT_NE(dj.problems[0].line.find("ranks 4,5 come from other processes in "
                                       "http://old/digest (host aaa) than in ring files of D: "
                                       "kept ring files of D's (its copy is the current one)"),
              std::string::npos)
        << dj.problems[0].line;
    EXPECT_EQ(dj.index->files().size(), 8u);
  }
  {
    // Without local files, the current copy beats one that sorts first by host name.
    DigestJob dj;
    AssembleFetchedJob({},
                       {Digest(Ranks(old, {4, 5, 6, 7}), "aaa", 2, "http://old/digest"),
                        Digest(Ranks(live, {4, 5, 6, 7}), "node1", 1, "http://n/digest")},
                       "", size_t{64} << 20, &dj);
    ASSERT_EQ(dj.problems.size(), 1u);
    for (const hd::RankFile& f : dj.index->files()) EXPECT_EQ(f.snap->host, "node1");
  }
}

TEST(SourceClashes, OneProcessReachedTwiceOrRestartedOnOneNodeIsNoClash) {
  // A restart on one node: its directory holds the old and the new process of rank 0, and a
  // second exporter sharing that directory sees only the new one (it read it late). One source
  // holding both is what one directory shows: both kept, no clash.
  std::vector<SourceFacts> facts(3);
  facts[1].label = "x";
  facts[2].label = "y";
  const std::vector<WriterClaim> restart = {{0, 1, {1}}, {0, 2, {1, 2}}};
  const exporters::RankClashes r = exporters::ResolveRankClashes(facts, restart);
  EXPECT_EQ(r.keep, (std::vector<char>{1, 1}));
  EXPECT_TRUE(r.problems.empty());
  // The same digest fetched twice: the same processes, counted once by the assembly.
  const JobBuilder job = StuckAtRank5();
  const FetchedDigest d = Digest(Ranks(job, {4, 5, 6, 7}), "node1", 3, "http://n/digest");
  LocalFiles local;
  local.files = Ranks(job, {0, 1, 2, 3});
  DigestJob dj;
  AssembleFetchedJob(std::move(local), {d, d}, "", size_t{64} << 20, &dj);
  EXPECT_TRUE(dj.problems.empty()) << ::testing::PrintToString(Lines(dj.problems));
  EXPECT_EQ(dj.index->files().size(), 8u);
}

}  // namespace
}  // namespace ncclscope::testing
