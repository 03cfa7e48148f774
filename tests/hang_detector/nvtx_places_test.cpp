// Verdicts name the training step and phase (NVTX, docs/nvtx.md) of the operations they are about:
// the culprit's and the victims', which differ exactly when the clue matters.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "hang_detector/ingest/rank_digest.h"
#include "hang_detector/verdicts/verdict_json.h"
#include "hang_detector/verdicts/verdict_text.h"
#include "tests/hang_detector/analyze_helpers.h"
#include "tests/hang_detector/device_compute_job.h"
#include "tests/hang_detector/nvtx_records.h"
#include "tests/hang_detector/step_model.h"

namespace ncclscope::testing {
namespace {

using Place = Verdict::Place;

constexpr uint32_t kBackward = 1;
constexpr uint32_t kOptimizer = 2;
constexpr uint32_t kEval = 3;
const std::vector<NvtxContextName> kNames = {
    {kBackward, "backward", "backward"},  // the innermost range is the phase itself
    {kOptimizer, "optimizer", "clip_grad"},
    {kEval, "eval", "eval"},
};

Analysis AnalyzeSet(const trace::TraceSet& set, double now) {
  static const FakeProbe running;
  hang_detector::AnalyzeOptions o = ConfirmAtOnce();
  o.now_wall_ns = JobBuilder::Wall(now);
  o.probe = &running;
  return hang_detector::Analyze(set, o);
}

// Four ranks in step 12: two allreduces in backward completed everywhere; ranks 0-2 then wait in
// the optimizer's allreduce #3, which rank 3 never issues.
JobBuilder StuckInBackward(uint64_t* world) {
  JobBuilder job(4);
  *world = job.Comm("world", {0, 1, 2, 3});
  for (int r = 0; r < 4; ++r) {
    job.Coll(r, *world, OpType::kAllReduce, 0.1, Done::kCompleted).reserved = NvtxWord(12, 1);
    job.Coll(r, *world, OpType::kAllReduce, 0.2, Done::kCompleted).reserved = NvtxWord(12, 1);
  }
  for (int r = 0; r < 3; ++r) {
    job.Coll(r, *world, OpType::kAllReduce, 1.0, Done::kPending).reserved =
        NvtxWord(12, kOptimizer);
  }
  job.HeartbeatAll(13.3);
  return job;
}

const Place* Find(const Verdict& v, const std::string& role) {
  for (const Place& p : v.where) {
    if (p.role == role) return &p;
  }
  return nullptr;
}

TEST(NvtxPlaces, CulpritAndVictimsInDifferentPhasesAreNamedApart) {
  uint64_t world;
  trace::TraceSet set = StuckInBackward(&world).Build();
  AddNameRecords(&set, kNames);
  const Analysis a = AnalyzeSet(set, 13.3);
  const Verdict& v = First(a);
  ASSERT_EQ(v.cls, VerdictClass::kMissing);
  ASSERT_EQ(v.where.size(), 2u);
  const Place& c = v.where[0];
  EXPECT_EQ(c.role, "culprit");
  EXPECT_EQ(c.ranks, std::vector<int>{3});
  EXPECT_TRUE(c.has_step);
  EXPECT_EQ(c.step, 12u);
  EXPECT_EQ(c.last_step, 12u);
  EXPECT_EQ(c.phase, "backward");
  EXPECT_EQ(c.range, "");  // the innermost range is the phase: not repeated
  EXPECT_EQ(c.basis, "its newest call, allreduce #2 on world");
  const Place& w = v.where[1];
  EXPECT_EQ(w.role, "victim");
  EXPECT_EQ(w.ranks, (std::vector<int>{0, 1, 2}));
  EXPECT_EQ(w.step, 12u);
  EXPECT_EQ(w.phase, "optimizer");
  EXPECT_EQ(w.range, "clip_grad");
  EXPECT_EQ(w.basis, "waiting in allreduce #3 on world");

  const std::string text = hang_detector::RenderText(a, false);
  EXPECT_NE(
      text.find(
          "allreduce #3: rank 3 never issued it; ranks 0-2 wait [culprit in step 12, backward; "
          "victims in step 12, optimizer]; since 12.3 s"),
      std::string::npos)
      << text;
  EXPECT_NE(text.find("  where: culprit rank 3 in step 12, backward (its newest call, allreduce "
                      "#2 on world)\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("  where: victims ranks 0-2 in step 12, optimizer (innermost: clip_grad) "
                      "(waiting in allreduce #3 on world)\n"),
            std::string::npos)
      << text;

  const nlohmann::json j = nlohmann::json::parse(hang_detector::RenderJson(a));
  const nlohmann::json& where = j["verdicts"][0]["where"];
  ASSERT_EQ(where.size(), 2u) << where.dump();
  EXPECT_EQ(where[0]["role"], "culprit");
  EXPECT_EQ(where[0]["ranks"], nlohmann::json::array({3}));
  EXPECT_EQ(where[0]["step"], 12);
  EXPECT_EQ(where[0]["phase"], "backward");
  EXPECT_FALSE(where[0].contains("range"));
  EXPECT_FALSE(where[0].contains("last_step"));
  EXPECT_EQ(where[1]["role"], "victim");
  EXPECT_EQ(where[1]["ranks"], nlohmann::json::array({0, 1, 2}));
  EXPECT_EQ(where[1]["phase"], "optimizer");
  EXPECT_EQ(where[1]["range"], "clip_grad");
  EXPECT_EQ(where[1]["basis"], "waiting in allreduce #3 on world");
}

TEST(NvtxPlaces, WithoutNvtxNothingIsSaidAndTheTextIsUnchanged) {
  uint64_t world;
  JobBuilder job(4);
  world = job.Comm("world", {0, 1, 2, 3});
  for (int r = 0; r < 4; ++r) job.Coll(r, world, OpType::kAllReduce, 0.1, Done::kCompleted);
  for (int r = 0; r < 3; ++r) job.Coll(r, world, OpType::kAllReduce, 1.0, Done::kPending);
  job.HeartbeatAll(13.3);
  const Analysis a = AnalyzeSet(job.Build(), 13.3);
  const Verdict& v = First(a);
  ASSERT_EQ(v.cls, VerdictClass::kMissing);
  EXPECT_TRUE(v.where.empty());
  const std::string text = hang_detector::RenderText(a, false);
  EXPECT_EQ(text.find("where:"), std::string::npos) << text;
  EXPECT_NE(text.find("rank 3 never issued it; ranks 0-2 wait; since 12.3 s"), std::string::npos)
      << text;
  const nlohmann::json j = nlohmann::json::parse(hang_detector::RenderJson(a));
  EXPECT_FALSE(j["verdicts"][0].contains("where"));
}

TEST(NvtxPlaces, ARankWhoseCallsCarryNoContextGetsNoPlace) {
  uint64_t world;
  JobBuilder job = StuckInBackward(&world);
  trace::TraceSet set = job.Build();
  // Rank 3's thread was in no range: its records say nothing about where it was.
  for (trace::StoredRecord& r : set.files[3].records) r.data.reserved = 0;
  AddNameRecords(&set, kNames);
  const Analysis a = AnalyzeSet(set, 13.3);
  const Verdict& v = First(a);
  ASSERT_EQ(v.culprits, std::vector<int>{3});
  EXPECT_EQ(Find(v, "culprit"), nullptr);
  ASSERT_NE(Find(v, "victim"), nullptr);
  EXPECT_EQ(Find(v, "victim")->phase, "optimizer");
  EXPECT_NE(hang_detector::VerdictHeadline(v).find("[victims in step 12, optimizer]"),
            std::string::npos)
      << hang_detector::VerdictHeadline(v);
}

TEST(NvtxPlaces, DesyncCulpritIsPlacedAtItsOwnCallOfTheNumber) {
  uint64_t world;
  JobBuilder job(4);
  world = job.Comm("world", {0, 1, 2, 3});
  for (int r = 0; r < 4; ++r) {
    job.Coll(r, world, OpType::kAllReduce, 0.1, Done::kCompleted).reserved = NvtxWord(7, 1);
  }
  // Rank 0 runs its evaluation's allgather where the others reduce gradients.
  job.Coll(0, world, OpType::kAllGather, 1.0, Done::kPending).reserved = NvtxWord(7, kEval);
  for (int r = 1; r < 4; ++r) {
    job.Coll(r, world, OpType::kAllReduce, 1.0, Done::kPending).reserved = NvtxWord(7, kOptimizer);
  }
  job.HeartbeatAll(2);
  trace::TraceSet set = job.Build();
  AddNameRecords(&set, kNames);
  const Analysis a = AnalyzeSet(set, 2);
  const Verdict& v = First(a);
  ASSERT_EQ(v.cls, VerdictClass::kDesync);
  ASSERT_NE(Find(v, "culprit"), nullptr);
  EXPECT_EQ(Find(v, "culprit")->phase, "eval");
  EXPECT_EQ(Find(v, "culprit")->basis, "its allgather #2 on world");
  ASSERT_NE(Find(v, "victim"), nullptr);
  EXPECT_EQ(Find(v, "victim")->ranks, (std::vector<int>{1, 2, 3}));
  EXPECT_EQ(Find(v, "victim")->phase, "optimizer");
}

TEST(NvtxPlaces, OverwrittenNamesKeepTheStepAndSayTheNameIsGone) {
  uint64_t world;
  // No name records: the ring moved past them.
  const Analysis a = AnalyzeSet(StuckInBackward(&world).Build(), 13.3);
  const Place* c = Find(First(a), "culprit");
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(c->step, 12u);
  EXPECT_EQ(c->phase, "");
  EXPECT_EQ(c->range, "#1");
}

TEST(NvtxPlaces, ContextsAreRunsNotAWordPerRecord) {
  JobBuilder job(1);
  const uint64_t world = job.Comm("world", {0});
  // 30 steps of 10 calls in two phases, a probe record (no context) between each call.
  for (int s = 0; s < 30; ++s) {
    for (int i = 0; i < 10; ++i) {
      const double t = s + i * 0.01;
      job.Coll(0, world, OpType::kAllReduce, t, Done::kCompleted).reserved =
          NvtxWord(s, i < 6 ? kBackward : kOptimizer);
      job.DeviceStart(0, world, 0, t + 0.001);
    }
  }
  trace::TraceSet set = job.Build();
  AddNameRecords(&set, kNames);
  const std::vector<hang_detector::RankFile> files = CompactFiles(set);
  const hang_detector::RankFile& f = files[0];
  EXPECT_EQ(f.nvtx_runs.size(), 60u);  // one per (step, phase), whatever lies between the calls
  for (uint32_t p = 0; p < f.size(); ++p) {
    const trace::RecordData r = set.files[0].records[p].data;
    if (static_cast<OpType>(r.op) != OpType::kAllReduce) continue;
    EXPECT_EQ(f.NvtxWordAt(p), r.reserved) << "record " << p;
  }
  EXPECT_EQ(f.NvtxAt(f.size() - 2).phase, "optimizer");
  EXPECT_EQ(f.NvtxAt(f.size() - 2).step, 29u);

  // A digest's cut keeps the contexts of the calls it keeps.
  const hang_detector::DigestCut cut = hang_detector::CutForDigest(f, {});
  ASSERT_GT(cut.omitted, 0u);
  for (uint32_t p = 0; p < cut.file.size(); ++p) {
    if (static_cast<OpType>(cut.file.ShapeAt(p).op) != OpType::kAllReduce) continue;
    const uint64_t index = cut.file.IndexOf(p);
    EXPECT_EQ(cut.file.NvtxWordAt(p), set.files[0].records[index].data.reserved) << "record " << p;
  }
  EXPECT_EQ(cut.file.NvtxAt(cut.file.size() - 2).phase, "optimizer");
}

TEST(NvtxPlaces, ComputeStragglerIsPlacedInThePhaseAndStepsItIsLateIn) {
  constexpr int kRanks = 4;
  JobBuilder job(kRanks);
  StepModel model(&job, kRanks, 1);
  const uint64_t world = job.Comm("world", {0, 1, 2, 3});
  model.compute_slow = {{2, 2.0, 10}};
  for (int s = 0; s < 40; ++s) {
    model.Step({{world, OpType::kAllReduce, 0.001}}, {{0, 1, 2, 3}});
  }
  job.HeartbeatAll(model.Now());
  trace::TraceSet set = job.Build();
  // Step s's allreduce is the s-th record of every rank, made in backward.
  for (trace::RingSnapshot& f : set.files) {
    for (size_t i = 0; i < f.records.size(); ++i) f.records[i].data.reserved = NvtxWord(i, 1);
  }
  AddNameRecords(&set, kNames);
  const Analysis a = AnalyzeSet(set, model.Now() + 0.01);
  const Verdict& v = First(a);
  SCOPED_TRACE(hang_detector::RenderText(a, true));
  ASSERT_EQ(v.cls, VerdictClass::kStraggler);
  ASSERT_EQ(v.culprits, std::vector<int>{2});
  const Place* c = Find(v, "culprit");
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(c->phase, "backward");
  EXPECT_EQ(c->step, 10u);  // late from the step its compute slowed down, not before
  EXPECT_EQ(c->last_step, 39u);
  EXPECT_EQ(c->basis, "late to 30 of the 40 collectives #1..#40 on world");
  const Place* w = Find(v, "victim");
  ASSERT_NE(w, nullptr);
  EXPECT_EQ(w->ranks, (std::vector<int>{0, 1, 3}));
  EXPECT_NE(hang_detector::RenderText(a, false).find(
                "  where: culprit rank 2 in steps 10-39, backward (late to 30 of the 40"),
            std::string::npos);
  const nlohmann::json j = nlohmann::json::parse(hang_detector::RenderJson(a));
  EXPECT_EQ(j["verdicts"][0]["where"][0]["step"], 10);
  EXPECT_EQ(j["verdicts"][0]["where"][0]["last_step"], 39);
}

// A slow link is placed where its transfers were slow: the slow rank's calls of the collectives of
// its smallest slow group (its tensor-parallel pair) from the step its link slowed down, and its
// partner's, waiting in the same collectives.
TEST(NvtxPlaces, SlowLinkIsPlacedInThePhaseAndStepsOfItsSlowTransfers) {
  device_compute_job::Job j;
  j.model.link_slow = {{2, 3.0, 4}};
  j.Run();
  j.job.HeartbeatAll(j.model.Now());
  trace::TraceSet set = j.job.Build();
  // Each step is three collectives on every rank (tensor-parallel, data-parallel, world), made in
  // backward.
  for (trace::RingSnapshot& f : set.files) {
    for (size_t i = 0; i < f.records.size(); ++i) {
      f.records[i].data.reserved = NvtxWord(static_cast<uint32_t>(i / 3), kBackward);
    }
  }
  AddNameRecords(&set, kNames);
  const Analysis a = AnalyzeSet(set, j.model.Now() + 0.01);
  SCOPED_TRACE(hang_detector::RenderText(a, true));
  const Verdict& v = First(a);
  ASSERT_EQ(v.cls, VerdictClass::kStraggler);
  ASSERT_EQ(v.culprits, std::vector<int>{2});
  ASSERT_NE(v.summary.find("slow link"), std::string::npos);
  const Place* c = Find(v, "culprit");
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(c->ranks, std::vector<int>{2});
  EXPECT_EQ(c->phase, "backward");
  EXPECT_EQ(c->step, 4u);  // slow from the step its link slowed down, not before
  EXPECT_EQ(c->last_step, 19u);
  EXPECT_EQ(c->basis, "transfers slow in 16 of the 20 collectives #1..#20 on tp");
  const Place* w = Find(v, "victim");
  ASSERT_NE(w, nullptr);
  EXPECT_EQ(w->ranks, std::vector<int>{3});
  EXPECT_NE(hang_detector::RenderText(a, false).find(
                "  where: culprit rank 2 in steps 4-19, backward (transfers slow in 16 of the 20"),
            std::string::npos);
}

}  // namespace
}  // namespace ncclscope::testing
