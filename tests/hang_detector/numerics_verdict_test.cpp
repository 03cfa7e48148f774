// nan-origin and corrupt-output over synthetic jobs whose numerics records are written as the probe
// writes them (trace/numerics_record.h: after the sampled collective's own record, on every rank at
// the same sequence numbers): who fed the first NaN in, whose output differs, and that a healthy
// job, a sampling that missed the origin or hashes that are not comparable blame nobody.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <functional>

#include "hang_detector/verdicts/verdict_json.h"
#include "hang_detector/verdicts/verdict_text.h"
#include "tests/hang_detector/analyze_helpers.h"
#include "tests/hang_detector/numerics_records.h"
#include "tests/hang_detector/nvtx_records.h"

namespace ncclscope::testing {
namespace {

using hang_detector::ExitCode;
using hang_detector::IsHang;
using hang_detector::StageName;

using HeldAt = std::function<Held(int rank, uint64_t seq)>;

// `ranks` ranks on one communicator "world" run `count` completed collectives of `op`, #k at job
// time k / 10; every `period`th is sampled on every rank, its sample what `held` says.
struct Job {
  int ranks = 8;
  int count = 40;
  int period = 4;
  OpType op = OpType::kAllReduce;
  HeldAt held = [](int, uint64_t) { return Held{}; };
};

JobBuilder Build(const Job& j, uint64_t* world) {
  JobBuilder job(j.ranks);
  std::vector<int> all;
  for (int r = 0; r < j.ranks; ++r) all.push_back(r);
  *world = job.Comm("world", all);
  for (int k = 1; k <= j.count; ++k) {
    const double t = 0.1 * k;
    for (int r = 0; r < j.ranks; ++r) {
      job.Coll(r, *world, j.op, t, Done::kCompleted);
      if (k % j.period == 0) AddSample(&job, r, *world, k, j.op, t + 0.01, j.held(r, k));
    }
  }
  job.HeartbeatAll(10);  // alive when analysed, at 10
  return job;
}

Analysis AnalyzeJob(const JobBuilder& job, double now = 10) {
  return AnalyzeAt(job, now);
}

std::vector<const Verdict*> OfClass(const Analysis& a, VerdictClass c) {
  std::vector<const Verdict*> out;
  for (const Verdict& v : a.verdicts) {
    if (v.cls == c) out.push_back(&v);
  }
  return out;
}

bool Says(const Verdict& v, const std::string& words) {
  return v.summary.find(words) != std::string::npos;
}

// NaN from `from_seq` on `culprit`, everywhere from `spread_seq` (the collective after spread it).
HeldAt NanFrom(int culprit, uint64_t from_seq, uint64_t spread_seq) {
  return [=](int r, uint64_t seq) {
    Held h;
    if ((r == culprit && seq >= from_seq) || seq >= spread_seq) h.nan = 3 + r;
    return h;
  };
}

TEST(NanOrigin, SingleCulpritAtEightRanks) {
  Job j;
  j.held = NanFrom(5, 12, 13);
  uint64_t world;
  const Analysis a = AnalyzeJob(Build(j, &world));
  const Verdict& v = First(a);
  ASSERT_EQ(v.cls, VerdictClass::kNanOrigin) << v.summary;
  EXPECT_EQ(v.comm_id, world);
  EXPECT_EQ(v.comm_name, "world");
  EXPECT_EQ(v.op, "allreduce");
  EXPECT_EQ(v.seq, 12u);
  EXPECT_EQ(v.culprits, std::vector<int>{5});
  EXPECT_EQ(v.victims, (std::vector<int>{0, 1, 2, 3, 4, 6, 7}));
  EXPECT_EQ(v.unseen_count, 0);
  EXPECT_FALSE(IsHang(v.cls));
  EXPECT_TRUE(Says(v,
                   "rank 5 fed NaN/Inf into it (its input held 8 NaN and 0 Inf) while ranks "
                   "0-4,6,7 were clean"))
      << v.summary;
  EXPECT_TRUE(Says(v,
                   "later poisoned collectives are listed as consequences, not culprits: "
                   "world allreduce #16 (8 of 8 sampled ranks)"))
      << v.summary;
  // The culprit's own record, with its counts and first index.
  EXPECT_TRUE(std::any_of(v.evidence.begin(), v.evidence.end(), [](const auto& e) {
    return e.rank == 5 && e.has_record &&
           e.text.find("8 NaN and 0 Inf, first at element 320 (float32)") != std::string::npos;
  }));
  // A job computing NaN goes on: the exit code of a finding, the stage of its own, no "healthy".
  EXPECT_EQ(ExitCode(a), 1);
  EXPECT_STREQ(StageName(a), "numerics");
  EXPECT_TRUE(OfClass(a, VerdictClass::kHealthy).empty());
  EXPECT_EQ(OfClass(a, VerdictClass::kNanOrigin).size(), 1u);
}

TEST(NanOrigin, LaterPoisonedCollectivesAreConsequencesNotCulprits) {
  // Rank 5 first at #12; at #16 only ranks 4 and 5 (spreading through a neighbour), at #20 on
  // every rank: neither rank 4 nor the others is ever blamed.
  Job j;
  j.held = [](int r, uint64_t seq) {
    Held h;
    if ((r == 5 && seq >= 12) || (r == 4 && seq >= 16) || seq >= 20) h.inf = 1;
    return h;
  };
  uint64_t world;
  const Analysis a = AnalyzeJob(Build(j, &world));
  const auto found = OfClass(a, VerdictClass::kNanOrigin);
  ASSERT_EQ(found.size(), 1u);
  const Verdict& v = *found[0];
  EXPECT_EQ(v.seq, 12u);
  EXPECT_EQ(v.culprits, std::vector<int>{5});
  EXPECT_TRUE(Says(v,
                   "world allreduce #16 (2 of 8 sampled ranks), world allreduce #20 (8 of 8 "
                   "sampled ranks), world allreduce #24 (8 of 8 sampled ranks) and 4 more"))
      << v.summary;
  const auto consequences = std::count_if(v.evidence.begin(), v.evidence.end(), [](const auto& e) {
    return e.text.rfind("consequence, not a culprit", 0) == 0;
  });
  EXPECT_EQ(consequences, 5);
}

TEST(NanOrigin, OriginMissedBySamplingBlamesNobody) {
  // Rank 5's NaN enters at #13 and spreads at #14: #12 was clean everywhere, #16 is poisoned on
  // every rank. The victim ranks at #16 must not be named.
  Job j;
  j.held = NanFrom(5, 13, 14);
  uint64_t world;
  const Analysis a = AnalyzeJob(Build(j, &world));
  const Verdict& v = First(a);
  ASSERT_EQ(v.cls, VerdictClass::kNanOrigin);
  EXPECT_EQ(v.seq, 16u);
  EXPECT_TRUE(v.culprits.empty());
  EXPECT_TRUE(Says(v,
                   "every sampled rank's input already held NaN/Inf (ranks 0-7): the origin "
                   "was not sampled; it lies between world allreduce #12 (clean on every "
                   "sampled rank) and this collective; no rank is blamed"))
      << v.summary;
  EXPECT_EQ(ExitCode(a), 1);
}

TEST(NanOrigin, PoisonedAtTheFirstSamplePrecedesTheWindow) {
  Job j;
  j.held = NanFrom(5, 1, 1);
  uint64_t world;
  const Analysis a = AnalyzeJob(Build(j, &world));
  const Verdict& v = First(a);
  ASSERT_EQ(v.cls, VerdictClass::kNanOrigin);
  EXPECT_EQ(v.seq, 4u);
  EXPECT_TRUE(v.culprits.empty());
  EXPECT_TRUE(Says(v, "at the first sampled collective: the origin precedes the sampling window"))
      << v.summary;
}

TEST(NanOrigin, RankWithoutASampleIsUnknownNeverCleanNorCulprit) {
  // Rank 7 wrote no sample of #12 (its ring lost it, say): of the ranks seen only rank 5 is
  // poisoned; rank 7 is neither cleared nor blamed.
  JobBuilder job(8);
  std::vector<int> all = {0, 1, 2, 3, 4, 5, 6, 7};
  const uint64_t world = job.Comm("world", all);
  for (int r = 0; r < 8; ++r) {
    job.Coll(r, world, OpType::kAllReduce, 0.1, Done::kCompleted);
    Held h;
    h.nan = r == 5 ? 2 : 0;
    if (r != 7) AddSample(&job, r, world, 1, OpType::kAllReduce, 0.11, h);
  }
  job.HeartbeatAll(10);
  const Analysis a = AnalyzeJob(job);
  const Verdict& v = First(a);
  ASSERT_EQ(v.cls, VerdictClass::kNanOrigin);
  EXPECT_EQ(v.culprits, std::vector<int>{5});
  EXPECT_EQ(v.unseen, std::vector<int>{7});
  EXPECT_EQ(v.unseen_count, 1);
  EXPECT_TRUE(Says(v, "while ranks 0-4,6 were clean")) << v.summary;
}

TEST(NanOrigin, EarliestInTimeAcrossCommunicators) {
  // Four ranks in a dp and a tp communicator. Rank 2 feeds a NaN into dp #8 at t = 8.0; tp #8 at
  // t = 8.5 is poisoned on ranks 2 and 3 (rank 3 got it from rank 2 through dp): the origin is dp
  // #8 whatever the communicators' ids, and rank 3 is only a consequence.
  JobBuilder job(4);
  const uint64_t dp = job.Comm("dp", {0, 1, 2, 3});
  const uint64_t tp = job.Comm("tp", {0, 1, 2, 3});
  for (int k = 1; k <= 12; ++k) {
    for (int r = 0; r < 4; ++r) {
      job.Coll(r, dp, OpType::kAllReduce, k, Done::kCompleted);
      if (k % 4 == 0) {
        Held h;
        h.nan = (r == 2 && k >= 8) || k >= 12 ? 1 : 0;
        AddSample(&job, r, dp, k, OpType::kAllReduce, k + 0.01, h);
      }
      job.Coll(r, tp, OpType::kAllGather, k + 0.5, Done::kCompleted);
      if (k % 4 == 0) {
        Held h;
        h.nan = (r >= 2 && k >= 8) || k >= 12 ? 1 : 0;
        AddSample(&job, r, tp, k, OpType::kAllGather, k + 0.51, h);
      }
    }
  }
  job.HeartbeatAll(13);
  const Analysis a = AnalyzeJob(job, 14);
  const Verdict& v = First(a);
  ASSERT_EQ(v.cls, VerdictClass::kNanOrigin);
  EXPECT_EQ(v.comm_id, dp);
  EXPECT_EQ(v.comm_name, "dp");
  EXPECT_EQ(v.seq, 8u);
  EXPECT_EQ(v.culprits, std::vector<int>{2});
  EXPECT_TRUE(Says(v, "tp allgather #8 (2 of 4 sampled ranks)")) << v.summary;
}

TEST(NanOrigin, TheNvtxStepOrdersCommunicatorsBeforeTheEntryTime) {
  // Every call carries its training step. tp #k runs in step k but is entered after dp #(k+1)
  // (entry times skewed, as clocks of different hosts can be): rank 1's NaN at tp #3 (step 3)
  // precedes dp #4 (step 4), poisoned everywhere, although dp #4 was entered first.
  JobBuilder job(4);
  const uint64_t dp = job.Comm("dp", {0, 1, 2, 3});
  const uint64_t tp = job.Comm("tp", {0, 1, 2, 3});
  for (int k = 1; k <= 6; ++k) {
    for (int r = 0; r < 4; ++r) {
      job.Coll(r, dp, OpType::kAllReduce, k, Done::kCompleted).reserved = NvtxWord(k, 1);
      Held d;
      d.nan = k >= 4 ? 1 : 0;
      AddSample(&job, r, dp, k, OpType::kAllReduce, k + 0.01, d);
      job.Coll(r, tp, OpType::kAllReduce, k + 1.5, Done::kCompleted).reserved = NvtxWord(k, 1);
      Held t;
      t.nan = (r == 1 && k >= 3) || k >= 4 ? 1 : 0;
      AddSample(&job, r, tp, k, OpType::kAllReduce, k + 1.51, t);
    }
  }
  job.HeartbeatAll(10);
  const Analysis a = AnalyzeJob(job);
  const Verdict& v = First(a);
  ASSERT_EQ(v.cls, VerdictClass::kNanOrigin);
  EXPECT_EQ(v.comm_id, tp);
  EXPECT_EQ(v.seq, 3u);
  EXPECT_EQ(v.culprits, std::vector<int>{1});
}

TEST(NanOrigin, HangStillComesFirst) {
  // Rank 5 poisons #12; later rank 3 never issues #41 that the others wait in.
  Job j;
  j.held = NanFrom(5, 12, 13);
  uint64_t world;
  JobBuilder job = Build(j, &world);
  for (int r = 0; r < 8; ++r) {
    if (r != 3) job.Coll(r, world, OpType::kAllReduce, 4.5, Done::kPending);
  }
  job.HeartbeatAll(200);
  const Analysis a = AnalyzeWith(job, 200, ConfirmAtOnce());
  ASSERT_GE(a.verdicts.size(), 2u);
  EXPECT_TRUE(IsHang(a.verdicts[0].cls));
  EXPECT_EQ(a.verdicts[0].culprits, std::vector<int>{3});
  EXPECT_EQ(a.verdicts[1].cls, VerdictClass::kNanOrigin);
  EXPECT_EQ(ExitCode(a), 2);
  EXPECT_STREQ(StageName(a), "hang");
}

// Samples with the output hashed (and the input scanned clean), each rank's hash as `hash` says.
HeldAt Hashes(const std::function<uint64_t(int rank, uint64_t seq)>& hash) {
  return [=](int r, uint64_t seq) {
    Held h;
    h.hashed = true;
    h.hash = hash(r, seq);
    return h;
  };
}

TEST(CorruptOutput, MinorityRankIsTheCulprit) {
  Job j;
  j.held = Hashes([](int r, uint64_t seq) { return r == 3 && seq == 12 ? 0xbad : 0x600d; });
  uint64_t world;
  const Analysis a = AnalyzeJob(Build(j, &world));
  const Verdict& v = First(a);
  ASSERT_EQ(v.cls, VerdictClass::kCorruptOutput);
  EXPECT_EQ(v.comm_id, world);
  EXPECT_EQ(v.seq, 12u);
  EXPECT_EQ(v.culprits, std::vector<int>{3});
  EXPECT_FALSE(v.tie);
  EXPECT_FALSE(IsHang(v.cls));
  EXPECT_TRUE(Says(v,
                   "rank 3's output differs from the agreeing majority's (ranks 0-2,4-7), "
                   "where NCCL makes every rank's output bitwise identical; 1 incident: "
                   "allreduce #12 (a single incident so far)"))
      << v.summary;
  EXPECT_TRUE(std::any_of(v.evidence.begin(), v.evidence.end(), [](const auto& e) {
    return e.rank == 3 &&
           e.text.find("hashed 0000000000000bad over 1024 bytes") != std::string::npos;
  }));
  EXPECT_EQ(ExitCode(a), 1);
  EXPECT_TRUE(OfClass(a, VerdictClass::kNanOrigin).empty());
}

TEST(CorruptOutput, TwoRanksThatDisagreeAreATie) {
  Job j;
  j.ranks = 2;
  j.held = Hashes([](int r, uint64_t seq) { return r == 1 && seq == 8 ? 0xbad : 0x600d; });
  uint64_t world;
  const Analysis a = AnalyzeJob(Build(j, &world));
  const Verdict& v = First(a);
  ASSERT_EQ(v.cls, VerdictClass::kCorruptOutput);
  EXPECT_TRUE(v.tie);
  EXPECT_EQ(v.culprits, (std::vector<int>{0, 1}));
  EXPECT_TRUE(Says(v,
                   "the outputs split into two equal halves (rank 0 vs rank 1): nothing "
                   "singles out the corrupt side"))
      << v.summary;
}

TEST(CorruptOutput, TwoAgainstTwoIsATie) {
  Job j;
  j.ranks = 4;
  j.held = Hashes([](int r, uint64_t seq) { return r >= 2 && seq == 8 ? 0xbad : 0x600d; });
  uint64_t world;
  const Analysis a = AnalyzeJob(Build(j, &world));
  const auto found = OfClass(a, VerdictClass::kCorruptOutput);
  ASSERT_EQ(found.size(), 1u);
  EXPECT_TRUE(found[0]->tie);
  EXPECT_EQ(found[0]->culprits, (std::vector<int>{0, 1, 2, 3}));
  EXPECT_TRUE(Says(*found[0], "two equal halves (ranks 0,1 vs ranks 2,3)")) << found[0]->summary;
  EXPECT_NE(hang_detector::RenderText(a, false).find("[tie: 0,1,2,3]"), std::string::npos);
}

TEST(CorruptOutput, RepeatedIncidentsComeFirstAndSaySo) {
  // Rank 3 differs at #12, #24 and #36; rank 6 once at #20.
  Job j;
  j.held = Hashes([](int r, uint64_t seq) {
    if (r == 3 && seq % 12 == 0) return uint64_t{0xbad3} + seq;
    if (r == 6 && seq == 20) return uint64_t{0xbad6};
    return uint64_t{0x600d} + seq;
  });
  uint64_t world;
  const Analysis a = AnalyzeJob(Build(j, &world));
  const auto found = OfClass(a, VerdictClass::kCorruptOutput);
  ASSERT_EQ(found.size(), 2u);
  EXPECT_EQ(found[0]->culprits, std::vector<int>{3});
  EXPECT_EQ(found[0]->seq, 12u);
  EXPECT_TRUE(Says(*found[0],
                   "3 incidents: allreduce #12, #24, #36 (repeated on the same rank: "
                   "a persistent fault, such as its GPU or a link)"))
      << found[0]->summary;
  EXPECT_EQ(found[1]->culprits, std::vector<int>{6});
  EXPECT_TRUE(Says(*found[1], "1 incident: allreduce #20 (a single incident so far)"));
}

TEST(CorruptOutput, DifferentBytesOrHashVersionsAreNotCompared) {
  // Rank 3 hashed another length at #8 and with another hash version at #12: neither is a
  // disagreement. Ranks 0-2 and 4-7 agree throughout.
  Job j;
  j.held = [](int r, uint64_t seq) {
    Held h;
    h.hashed = true;
    h.hash = r == 3 ? 0xbad : 0x600d;
    if (r == 3 && seq == 8) h.bytes = 512;
    if (r == 3 && seq != 8) h.version = 2;
    return h;
  };
  uint64_t world;
  const Analysis a = AnalyzeJob(Build(j, &world));
  EXPECT_TRUE(OfClass(a, VerdictClass::kCorruptOutput).empty()) << First(a).summary;
  EXPECT_EQ(First(a).cls, VerdictClass::kHealthy);
  // Two ranks of different lengths: nothing to compare at all.
  Job two;
  two.ranks = 2;
  two.held = [](int r, uint64_t) {
    Held h;
    h.hashed = true;
    h.hash = r == 0 ? 0x600d : 0xbad;
    h.bytes = r == 0 ? 1024 : 2048;
    return h;
  };
  EXPECT_EQ(First(AnalyzeJob(Build(two, &world))).cls, VerdictClass::kHealthy);
}

TEST(CorruptOutput, ReduceScatterHashesAreNeverCompared) {
  // Each rank's block of a reduce-scatter is its own: different hashes are expected.
  Job j;
  j.op = OpType::kReduceScatter;
  j.held = Hashes([](int r, uint64_t) { return uint64_t{0x1000} + static_cast<uint64_t>(r); });
  uint64_t world;
  const Analysis a = AnalyzeJob(Build(j, &world));
  EXPECT_EQ(First(a).cls, VerdictClass::kHealthy);
  EXPECT_EQ(ExitCode(a), 0);
}

TEST(Numerics, HealthyJobHasNoNumericsVerdict) {
  uint64_t world;
  Job sampled;
  sampled.held = Hashes([](int, uint64_t seq) { return uint64_t{0x600d} + seq; });
  Job unsampled;
  unsampled.period = 1000;  // no sample at all
  for (const Job& j : {sampled, unsampled}) {
    const Analysis a = AnalyzeJob(Build(j, &world));
    ASSERT_EQ(a.verdicts.size(), 1u);
    EXPECT_EQ(a.verdicts[0].cls, VerdictClass::kHealthy);
    EXPECT_EQ(ExitCode(a), 0);
    EXPECT_STREQ(StageName(a), "healthy");
  }
}

TEST(Numerics, TextAndJsonShowTheVerdicts) {
  Job j;
  j.held = [](int r, uint64_t seq) {
    Held h = Hashes([](int rr, uint64_t s) { return rr == 3 && s == 12 ? 0xbad : 0x600d; })(r, seq);
    if ((r == 5 && seq >= 12) || seq >= 13) h.nan = 1;
    return h;
  };
  uint64_t world;
  const Analysis a = AnalyzeJob(Build(j, &world));
  ASSERT_EQ(a.verdicts.size(), 2u);
  EXPECT_EQ(a.verdicts[0].cls, VerdictClass::kCorruptOutput);  // corruption can make the NaN
  EXPECT_EQ(a.verdicts[1].cls, VerdictClass::kNanOrigin);
  const std::string text = hang_detector::RenderText(a, false);
  EXPECT_NE(text.find("NUMERICS (corrupt-output) comm world"), std::string::npos) << text;
  EXPECT_NE(text.find("NUMERICS (nan-origin) comm world"), std::string::npos) << text;
  EXPECT_NE(text.find("  culprits 5; victims 0,1,2,3,4,6,7"), std::string::npos) << text;
  EXPECT_EQ(text.find("confirmed"), std::string::npos) << text;  // not a hang: no stage two
  const auto json = nlohmann::json::parse(hang_detector::RenderJson(a));
  EXPECT_EQ(json["stage"], "numerics");
  EXPECT_EQ(json["exit_code"], 1);
  EXPECT_EQ(json["verdicts"][0]["class"], "corrupt-output");
  EXPECT_EQ(json["verdicts"][1]["class"], "nan-origin");
  EXPECT_EQ(json["verdicts"][1]["culprits"], nlohmann::json::array({5}));
  EXPECT_FALSE(json["verdicts"][1].contains("confirmed"));
}

TEST(Numerics, RankFileKeepsTheSamplesWhole) {
  Job j;
  j.count = 8;
  j.held = [](int r, uint64_t) {
    Held h;
    h.nan = 7;
    h.hashed = true;
    h.hash = 0xfeedface00000000ull + static_cast<uint64_t>(r);
    return h;
  };
  uint64_t world;
  const auto files = CompactFiles(Build(j, &world).Build());
  ASSERT_EQ(files.size(), 8u);
  const auto& f = files[2];
  ASSERT_EQ(f.numerics.size(), 2u);  // #4 and #8
  const auto& e = f.numerics[1];
  EXPECT_EQ(f.ShapeAt(e.pos).op, static_cast<uint32_t>(OpType::kNumerics));
  EXPECT_EQ(e.sample.seq, 8u);
  EXPECT_EQ(e.sample.op, OpType::kAllReduce);
  EXPECT_EQ(e.sample.nan_count, 7u);
  EXPECT_EQ(e.sample.first_nonfinite, 128u);
  EXPECT_EQ(e.sample.hash, 0xfeedface00000002ull);
  EXPECT_EQ(e.sample.hash_bytes, 1024u);
  EXPECT_EQ(e.sample.hash_version, 1u);
}

}  // namespace
}  // namespace ncclscope::testing
