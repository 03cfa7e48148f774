// The node digest without a network: a rank's records cut to its frontier and sent through the
// codec come back as the same records on the receiver's clock; what was cut reads as lost and
// the verdict stays the same; bytes that are not a digest are refused with the reason, never a
// crash or an unbounded allocation.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>

#include "exporters/multinode/digest.pb.h"
#include "exporters/multinode/digest_codec.h"
#include "hang_detector/decision/correlator.h"
#include "hang_detector/ingest/rank_digest.h"
#include "tests/exporters/node_digest_bytes.h"
#include "tests/hang_detector/job_builder.h"
#include "tests/hang_detector/nvtx_records.h"

namespace ncclscope::testing {
namespace {

namespace hd = hang_detector;
using exporters::DecodedDigest;
using exporters::DecodeNodeDigest;
using trace::OpType;

constexpr int64_t kSecond = 1000000000;

DecodedDigest Decode(const std::string& bytes, int64_t received) {
  DecodedDigest d;
  std::string error;
  EXPECT_TRUE(DecodeNodeDigest(bytes, "http://node-a:9478/digest", received, &d, &error)) << error;
  return d;
}

std::string Refusal(const std::string& bytes, const exporters::DigestBounds& bounds = {}) {
  DecodedDigest d;
  std::string error;
  if (DecodeNodeDigest(bytes, "src", JobBuilder::Wall(10), &d, &error, bounds)) return "";
  return error;
}

// Every kind of record a ring holds: collectives completed and pending, send/recv, a creation call
// still blocked, profiler marks, untracked completions, a wrapped ring, another host.
JobBuilder RichJob() {
  JobBuilder job(4);
  const uint64_t world = job.Comm("world", {0, 1, 2, 3});
  const uint64_t tp = job.Comm("tp", {0, 1}, world, 1);
  for (int r = 0; r < 4; ++r) {
    job.ProfilerAttach(r, world, 0.01);
    for (int i = 0; i < 30; ++i) {
      job.Coll(r, world, OpType::kAllReduce, 0.1 + i * 0.01, Done::kCompleted);
      job.DeviceStart(r, world, i + 1, 0.1 + i * 0.01);
    }
  }
  job.Send(0, tp, 1, 0.5, Done::kCompleted);
  job.Recv(1, tp, 0, 0.5, Done::kCompleted);
  job.Coll(0, tp, OpType::kAllGather, 0.6, Done::kUntracked, 1024, kFloat16);
  job.Coll(1, tp, OpType::kAllGather, 0.6, Done::kPending, 1024, kFloat16);
  job.Coll(2, world, OpType::kBroadcast, 0.7, Done::kPending, 64, kFloat32, 3);
  job.SplitInCall(3, world, 2, 0, 0.8);
  job.Host(3, "node-b");
  job.Wrap(2, 20);
  job.HeartbeatAll(1.0);
  return job;
}

void ExpectSameRecords(const hd::RankFile& a, const hd::RankFile& b) {
  ASSERT_EQ(a.size(), b.size());
  for (uint32_t p = 0; p < a.size(); ++p) {
    SCOPED_TRACE("record " + std::to_string(p));
    const trace::RecordData x = a.At(p), y = b.At(p);
    EXPECT_EQ(std::memcmp(&x, &y, sizeof(x)), 0);
    EXPECT_EQ(a.IndexOf(p), b.IndexOf(p));
  }
  EXPECT_EQ(a.shapes, b.shapes);
  EXPECT_EQ(a.index_runs, b.index_runs);
  EXPECT_EQ(a.last_completed_pos, b.last_completed_pos);
  EXPECT_EQ(a.oldest_waiting_pos, b.oldest_waiting_pos);
  EXPECT_EQ(a.oldest_waiting_enter, b.oldest_waiting_enter);
}

TEST(DigestCodec, RoundTripKeepsEveryRecordAndShiftsTimesOntoTheReceiversClock) {
  const std::vector<hd::RankFile> files = CompactFiles(RichJob().Build());
  const int64_t produced = JobBuilder::Wall(1.5);
  const int64_t received = produced + 7 * kSecond + 123;  // another host's clock: 7 s ahead
  const DecodedDigest d =
      Decode(EncodeDigest(files, produced, hd::ProcessState::kStopped), received);
  EXPECT_EQ(d.header.host, kHost);
  EXPECT_EQ(d.header.job_id, "job-1");
  ASSERT_EQ(d.files.size(), files.size());
  for (size_t i = 0; i < files.size(); ++i) {
    SCOPED_TRACE("rank " + std::to_string(i));
    const hd::RankFile& a = files[i];
    const hd::RankFile& b = d.files[i];
    ExpectSameRecords(a, b);
    EXPECT_EQ(b.rank, a.rank);
    EXPECT_EQ(b.snap->pid, a.snap->pid);
    EXPECT_EQ(b.snap->host, a.snap->host);
    EXPECT_EQ(b.snap->flags, a.snap->flags);
    EXPECT_EQ(b.snap->world_size, a.snap->world_size);
    EXPECT_EQ(b.snap->overwritten, a.snap->overwritten);
    ASSERT_EQ(b.snap->comms.size(), a.snap->comms.size());
    for (size_t c = 0; c < a.snap->comms.size(); ++c) {
      EXPECT_EQ(b.snap->comms[c].id, a.snap->comms[c].id);
      EXPECT_EQ(b.snap->comms[c].name, a.snap->comms[c].name);
      EXPECT_EQ(b.snap->comms[c].rank, a.snap->comms[c].rank);
      EXPECT_EQ(b.snap->comms[c].nranks, a.snap->comms[c].nranks);
      EXPECT_EQ(b.snap->comms[c].parent_id, a.snap->comms[c].parent_id);
      EXPECT_EQ(b.snap->comms[c].pending, a.snap->comms[c].pending);
    }
    // Every wall time moves by exactly the transport's shift; monotonic times stay the writer's.
    EXPECT_EQ(b.wall_offset - a.wall_offset, received - produced);
    EXPECT_EQ(b.heartbeat_wall - a.heartbeat_wall, received - produced);
    ASSERT_TRUE(b.remote.has_value());
    EXPECT_EQ(b.remote->process, hd::ProcessState::kStopped);
    EXPECT_EQ(b.remote->source, "http://node-a:9478/digest");
  }
  EXPECT_EQ(d.files[2].snap->overwritten, files[2].snap->overwritten);
  EXPECT_GT(files[2].snap->overwritten, 0u);
}

TEST(DigestCodec, AStampAppendedToCachedBytesIsTheProductionTimeReadBack) {
  const std::vector<hd::RankFile> files = CompactFiles(RichJob().Build());
  std::string bytes = EncodeDigest(files, JobBuilder::Wall(1.5));
  const int64_t served = JobBuilder::Wall(2.2);
  exporters::StampProducedAt(&bytes, served);
  const int64_t received = served + 3 * kSecond;
  const DecodedDigest d = Decode(bytes, received);
  EXPECT_EQ(d.header.produced_at_ns, served);
  EXPECT_EQ(d.header.built_at_ns, JobBuilder::Wall(1.5));
  EXPECT_EQ(d.files[0].wall_offset - files[0].wall_offset, received - served);
}

// Two ranks, 200 allreduces; rank 0 then waits in #201 (and has waited in a send since the
// start), rank 1 never issues #201.
JobBuilder LongMissing(uint64_t* world) {
  JobBuilder job(2);
  *world = job.Comm("world", {0, 1});
  const uint64_t pp = job.Comm("pp", {0, 1}, *world, 1);
  job.Send(0, pp, 1, 0.01, Done::kPending);
  for (int r = 0; r < 2; ++r) {
    for (int i = 0; i < 200; ++i) {
      job.Coll(r, *world, OpType::kAllReduce, 0.1 + i * 0.001, Done::kCompleted);
    }
  }
  job.Coll(0, *world, OpType::kAllReduce, 1.0, Done::kPending);
  job.HeartbeatAll(20);
  return job;
}

TEST(DigestCut, KeepsTheFrontierAndWhatIsLeftOutReadsAsLost) {
  uint64_t world = 0;
  const std::vector<hd::RankFile> files = CompactFiles(LongMissing(&world).Build());
  hd::DigestLimits limits;
  limits.per_comm = 16;
  limits.newest = 8;
  std::vector<hd::RankFile> cuts;
  for (const hd::RankFile& f : files) {
    const hd::DigestCut cut = hd::CutForDigest(f, limits);
    EXPECT_GT(cut.omitted, 150u);
    EXPECT_EQ(cut.omitted + cut.file.size(), f.size());
    cuts.push_back(cut.file);
  }
  // The waits are kept (the old send too), with their writer indices.
  const hd::RankFile& r0 = cuts[0];
  ASSERT_NE(r0.oldest_waiting_pos, hd::kNoRecord);
  EXPECT_EQ(r0.At(r0.oldest_waiting_pos).op, static_cast<uint32_t>(OpType::kSend));
  EXPECT_EQ(r0.IndexOf(r0.oldest_waiting_pos), files[0].IndexOf(files[0].oldest_waiting_pos));
  EXPECT_EQ(r0.At(r0.size() - 1).seq, 201u);

  const hd::JobIndex index = hd::JobIndex::FromFiles(cuts, {});
  const hd::CommModel* comm = index.FindComm(world);
  ASSERT_NE(comm, nullptr);
  for (const hd::CollLane& lane : comm->lanes) {
    const uint64_t last = lane.file == 0 ? 201 : 200;
    EXPECT_EQ(lane.EndSeq(), last + 1);
    // The newest 16, and on rank 1 its oldest record (#1): how far back its ring reaches.
    const auto kept = std::count_if(lane.pos.begin(), lane.pos.end(),
                                    [](uint32_t p) { return p != hd::kNoRecord; });
    EXPECT_EQ(kept, lane.file == 0 ? 16 : 17);
    EXPECT_EQ(index.StateAt(lane, 5), hd::OpState::kLost);
    EXPECT_EQ(index.StateAt(lane, 199), hd::OpState::kCompleted);
  }
  EXPECT_EQ(index.StateAt(comm->lanes[0], 201), hd::OpState::kPending);
  EXPECT_EQ(index.StateAt(comm->lanes[1], 201), hd::OpState::kNotIssued);

  // The verdict on the cut job is the verdict on the whole one.
  hd::AnalyzeOptions o;
  o.now_wall_ns = JobBuilder::Wall(20);
  const FakeProbe probe;
  o.probe = &probe;
  const hd::Analysis whole = hd::Analyze(hd::JobIndex::FromFiles(files, {}), o);
  const hd::Analysis cut = hd::Analyze(index, o);
  ASSERT_FALSE(whole.verdicts.empty());
  ASSERT_FALSE(cut.verdicts.empty());
  EXPECT_EQ(cut.verdicts[0].cls, whole.verdicts[0].cls);
  EXPECT_EQ(cut.verdicts[0].comm_id, whole.verdicts[0].comm_id);
  EXPECT_EQ(cut.verdicts[0].seq, whole.verdicts[0].seq);
  EXPECT_EQ(cut.verdicts[0].culprits, whole.verdicts[0].culprits);
  // The old send still waits in the cut: it leads, and #201 missing on rank 1 follows.
  EXPECT_EQ(cut.verdicts[0].cls, hd::VerdictClass::kP2PDeadlock);
  EXPECT_TRUE(std::any_of(cut.verdicts.begin(), cut.verdicts.end(), [](const hd::Verdict& v) {
    return v.cls == hd::VerdictClass::kMissing && v.seq == 201 && v.culprits == std::vector<int>{1};
  }));
  EXPECT_EQ(cut.verdicts.size(), whole.verdicts.size());
}

// Two ranks: 10 allreduces, a 40 s checkpoint, 300 allreduces; then rank 0 waits in #311, which
// rank 1 (alive) never issues: a suspect that only time confirms. Each ring starts with a profiler
// mark (not an operation), so the records a cut keeps show no pause of 40 s themselves.
JobBuilder CheckpointThenMissing(uint64_t* world) {
  JobBuilder job(2);
  *world = job.Comm("world", {0, 1});
  for (int r = 0; r < 2; ++r) {
    job.ProfilerAttach(r, *world, 0.05);
    for (int i = 0; i < 10; ++i) {
      job.Coll(r, *world, OpType::kAllReduce, 0.1 + i * 0.01, Done::kCompleted);
    }
    for (int i = 0; i < 300; ++i) {
      job.Coll(r, *world, OpType::kAllReduce, 40.3 + i * 0.01, Done::kCompleted);
    }
  }
  job.Coll(0, *world, OpType::kAllReduce, 44.0, Done::kPending);
  job.HeartbeatAll(50);
  return job;
}

TEST(DigestCodec, ALongestPauseOlderThanTheKeptRecordsTravelsWithTheDigest) {
  uint64_t world = 0;
  const std::vector<hd::RankFile> files = CompactFiles(CheckpointThenMissing(&world).Build());
  std::vector<hd::RankFile> cuts;
  for (const hd::RankFile& f : files) {
    ASSERT_GE(f.LongestPauseNs(), 40 * kSecond);
    hd::DigestCut cut = hd::CutForDigest(f, {});
    ASSERT_GT(cut.omitted, 200u);  // the checkpoint's neighbours are not kept
    EXPECT_GE(cut.file.pause_before_ns, 40 * kSecond);
    cuts.push_back(std::move(cut.file));
  }
  const int64_t produced = JobBuilder::Wall(50);
  const DecodedDigest d = Decode(EncodeDigest(cuts, produced), produced + 3 * kSecond);
  ASSERT_EQ(d.files.size(), cuts.size());
  for (size_t i = 0; i < cuts.size(); ++i) {
    EXPECT_EQ(d.files[i].pause_before_ns, cuts[i].pause_before_ns);
    EXPECT_GE(d.files[i].LongestPauseNs(), 40 * kSecond);
    // Without it, the kept records alone would not show the checkpoint.
    hd::RankFile forgetful = d.files[i];
    forgetful.pause_before_ns = 0;
    EXPECT_LT(forgetful.LongestPauseNs(), 40 * kSecond);
  }
  // What a user sees: the suspect is confirmed after 3 x 40 s, as on the ring files, not after the
  // 60 s floor a job without checkpoints gets.
  hd::AnalyzeOptions o;
  const FakeProbe probe;
  o.probe = &probe;
  o.now_wall_ns = JobBuilder::Wall(50);
  const hd::Analysis whole = hd::Analyze(hd::JobIndex::FromFiles(files, {}), o);
  o.now_wall_ns += 3 * kSecond;
  const hd::Analysis remote = hd::Analyze(hd::JobIndex::FromFiles(d.files, {}), o);
  for (const hd::Analysis* a : {&whole, &remote}) {
    ASSERT_FALSE(a->verdicts.empty());
    const hd::Verdict& v = a->verdicts[0];
    EXPECT_EQ(v.cls, hd::VerdictClass::kMissing);
    EXPECT_EQ(v.culprits, std::vector<int>{1});
    EXPECT_FALSE(v.confirmed);
    EXPECT_NEAR(v.confirm_after_s, 120, 1);
  }
}

TEST(DigestCut, AFileWithinTheLimitsIsKeptWhole) {
  const std::vector<hd::RankFile> files = CompactFiles(RichJob().Build());
  hd::DigestLimits limits;
  limits.per_comm = 1000;
  limits.newest = 1000;
  for (const hd::RankFile& f : files) {
    const hd::DigestCut cut = hd::CutForDigest(f, limits);
    EXPECT_EQ(cut.omitted, 0u);
    ExpectSameRecords(f, cut.file);
  }
}

// --- hostile bytes ---

std::string ValidBytes() {
  return EncodeDigest(CompactFiles(RichJob().Build()), JobBuilder::Wall(1.5));
}

TEST(DigestDecode, TruncatedBytesAreRefusedNamingTheSource) {
  const std::string bytes = ValidBytes();
  int refused = 0;
  for (size_t n = 0; n < bytes.size(); n += 7) {
    const std::string why = Refusal(bytes.substr(0, n));
    if (!why.empty()) {
      ++refused;
      EXPECT_EQ(why.rfind("src: ", 0), 0u) << why;
    }
  }
  EXPECT_GT(refused, static_cast<int>(bytes.size() / 7) * 9 / 10);
  EXPECT_NE(Refusal("").find("empty"), std::string::npos);
  EXPECT_NE(Refusal("GET / HTTP/1.1\r\n\r\n").find("not a node digest"), std::string::npos);
}

TEST(DigestDecode, AnotherFormatVersionIsRefused) {
  digest::NodeDigest d;
  ASSERT_TRUE(d.ParseFromString(ValidBytes()));
  d.set_format_version(2);
  EXPECT_NE(Refusal(d.SerializeAsString()).find("format version 2; this build reads version 1"),
            std::string::npos);
}

TEST(DigestDecode, CountsBeyondTheBoundsAreRefused) {
  const std::string bytes = ValidBytes();
  exporters::DigestBounds b;
  b.max_ranks = 2;
  EXPECT_NE(Refusal(bytes, b).find("4 ranks, more than 2"), std::string::npos);
  b = {};
  b.max_records_per_rank = 10;
  EXPECT_NE(Refusal(bytes, b).find("more than 10"), std::string::npos);
  b = {};
  b.max_bytes = 100;
  EXPECT_NE(Refusal(bytes, b).find("more than a digest may have"), std::string::npos);
}

TEST(DigestDecode, InconsistentRecordsAreRefused) {
  digest::NodeDigest good;
  ASSERT_TRUE(good.ParseFromString(ValidBytes()));
  auto refusal = [&](auto&& mutate) {
    digest::NodeDigest d = good;
    mutate(d.mutable_ranks(0));
    return Refusal(d.SerializeAsString());
  };
  EXPECT_NE(refusal([](digest::RankDigest* r) {
              r->mutable_records()->set_shape(0, 999);
            }).find("no shape"),
            std::string::npos);
  EXPECT_NE(refusal([](digest::RankDigest* r) {
              r->mutable_records()->add_flags(0);
            }).find("unequal length"),
            std::string::npos);
  EXPECT_NE(refusal([](digest::RankDigest* r) { r->set_run_pos(0, 1); }).find("record 0"),
            std::string::npos);
  EXPECT_NE(refusal([](digest::RankDigest* r) {
              r->add_run_pos(r->records().shape_size() - 1);
              r->add_run_index(0);
            }).find("backwards"),
            std::string::npos);
  EXPECT_NE(refusal([](digest::RankDigest* r) {
              r->add_run_pos(r->records().shape_size() - 1);
              r->add_run_index(uint64_t{1} << 40);
            }).find("more than a ring holds"),
            std::string::npos);
  EXPECT_NE(refusal([](digest::RankDigest* r) {
              r->mutable_records()->set_exit_code(0, 3);
            }).find("invalid time"),
            std::string::npos);
  EXPECT_NE(
      refusal([](digest::RankDigest* r) { r->mutable_records()->add_raw(5); }).find("left over"),
      std::string::npos);
  EXPECT_NE(refusal([](digest::RankDigest* r) {
              r->add_comms()->set_name(std::string(5000, 'x'));
            }).find("communicator name of 5000 bytes"),
            std::string::npos);
}

// Two ranks whose calls were made in step 12's backward, then rank 0's in step 13's optimizer.
std::vector<hd::RankFile> NvtxFiles() {
  JobBuilder job(2);
  const uint64_t world = job.Comm("world", {0, 1});
  for (int r = 0; r < 2; ++r) {
    for (int i = 0; i < 40; ++i) {
      job.Coll(r, world, OpType::kAllReduce, 0.1 + i * 0.01, Done::kCompleted).reserved =
          NvtxWord(12, 1);
      job.DeviceStart(r, world, i + 1, 0.1 + i * 0.01);
    }
  }
  job.Coll(0, world, OpType::kAllReduce, 0.6, Done::kPending).reserved = NvtxWord(13, 2);
  job.HeartbeatAll(1.0);
  trace::TraceSet set = job.Build();
  AddNameRecords(&set, {{1, "backward", "layer3"}, {2, "optimizer", "optimizer"}, {3, "eval", ""}});
  return CompactFiles(set);
}

TEST(DigestCodec, NvtxStepsAndPhasesOfTheKeptRecordsTravelWithTheDigest) {
  const std::vector<hd::RankFile> files = NvtxFiles();
  std::vector<hd::RankFile> cuts;
  for (const hd::RankFile& f : files) cuts.push_back(hd::CutForDigest(f, {}).file);
  ASSERT_LT(cuts[0].size(), files[0].size()) << "the cut leaves records out";
  const DecodedDigest d = Decode(EncodeDigest(cuts, JobBuilder::Wall(1.5)), JobBuilder::Wall(1.5));
  ASSERT_EQ(d.files.size(), 2u);
  for (size_t i = 0; i < cuts.size(); ++i) {
    EXPECT_EQ(d.files[i].nvtx_runs, cuts[i].nvtx_runs);
    for (uint32_t p = 0; p < cuts[i].size(); ++p) {
      const trace::NvtxWhere a = cuts[i].NvtxAt(p), b = d.files[i].NvtxAt(p);
      EXPECT_EQ(a.step, b.step);
      EXPECT_EQ(a.phase, b.phase);
      EXPECT_EQ(a.range, b.range);
    }
  }
  const hd::RankFile& rank0 = d.files[0];
  const trace::NvtxWhere last = rank0.NvtxAt(rank0.size() - 1);
  EXPECT_EQ(last.step, 13u);
  EXPECT_EQ(last.phase, "optimizer");
  EXPECT_EQ(rank0.NvtxAt(rank0.size() - 2).range, "layer3");
  // Only the names the kept records use travel: context 3 (eval) was never used.
  digest::NodeDigest pb;
  ASSERT_TRUE(pb.ParseFromString(EncodeDigest(cuts, JobBuilder::Wall(1.5))));
  EXPECT_EQ(pb.ranks(0).nvtx_contexts_size(), 2);
  EXPECT_EQ(pb.ranks(1).nvtx_contexts_size(), 1);
}

TEST(DigestDecode, InconsistentNvtxContextsAreRefused) {
  const std::vector<hd::RankFile> files = NvtxFiles();
  digest::NodeDigest good;
  ASSERT_TRUE(good.ParseFromString(EncodeDigest(files, JobBuilder::Wall(1.5))));
  ASSERT_GT(good.ranks(0).nvtx_run_pos_size(), 0);
  auto refusal = [&](auto&& mutate) {
    digest::NodeDigest d = good;
    mutate(d.mutable_ranks(0));
    return Refusal(d.SerializeAsString());
  };
  EXPECT_NE(refusal([](digest::RankDigest* r) { r->add_nvtx_run_pos(1); }).find("unequal columns"),
            std::string::npos);
  EXPECT_NE(refusal([](digest::RankDigest* r) {
              r->add_nvtx_run_pos(r->records().shape_size());
              r->add_nvtx_run_word(0);
            }).find("NVTX context runs out of order or past the records"),
            std::string::npos);
  EXPECT_NE(refusal([](digest::RankDigest* r) {
              r->mutable_nvtx_contexts(0)->set_id(255);
            }).find("NVTX context id 255 out of 1..254"),
            std::string::npos);
  EXPECT_NE(refusal([](digest::RankDigest* r) {
              r->mutable_nvtx_contexts(0)->set_phase(std::string(48, 'x'));
            }).find("a name longer than 47 bytes"),
            std::string::npos);
}

// Sequence numbers far apart on many communicators would make the index allocate lanes for every
// number in between: refused before that.
TEST(DigestDecode, SequenceSpansThatWouldNeedHugeLanesAreRefused) {
  JobBuilder job(1);
  std::vector<uint64_t> comms;
  for (int c = 0; c < 64; ++c) comms.push_back(job.Comm("c" + std::to_string(c), {0}));
  for (uint64_t comm : comms) job.Coll(0, comm, OpType::kAllReduce, 0.1, Done::kCompleted);
  std::vector<hd::RankFile> files = CompactFiles(job.Build());
  hd::RankFile& f = files[0];
  // Each second collective jumps far ahead, and the writer indices claim a ring that large.
  const uint32_t n = f.size();
  for (uint32_t p = 0; p < n; ++p) {
    if (trace::IsCollective(static_cast<OpType>(f.ShapeAt(p).op))) {
      f.ops.push_back(f.ops[p]);
      f.ops.back().seq = uint64_t{1} << 24;
    }
  }
  f.index_runs.emplace_back(f.size() - 1, uint64_t{1} << 25);
  hd::DeriveFrontier(&f);
  EXPECT_NE(Refusal(EncodeDigest(files, JobBuilder::Wall(1))).find("lane entries"),
            std::string::npos);
}

TEST(DigestDecode, ANegativeOrYearLongPauseIsRefused) {
  digest::NodeDigest good;
  ASSERT_TRUE(good.ParseFromString(ValidBytes()));
  for (const int64_t pause : {int64_t{-1}, int64_t{400} * 24 * 3600 * kSecond}) {
    digest::NodeDigest d = good;
    d.mutable_ranks(1)->set_pause_before_ns(pause);
    const std::string why = Refusal(d.SerializeAsString());
    EXPECT_NE(why.find("rank entry 1: longest pause of " + std::to_string(pause)),
              std::string::npos)
        << why;
  }
}

}  // namespace
}  // namespace ncclscope::testing
