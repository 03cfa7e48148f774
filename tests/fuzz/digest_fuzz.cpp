// Fuzz target: any bytes offered as a node digest (an exporter's /digest, a digest file). The
// decoder refuses them with a message naming the source, or its ranks go through the index, the
// correlator and both renderings: never a crash, never an unbounded allocation. Seeds are digests
// of synthetic jobs (hangs, waits, p2p, wrapped rings, blocked creation, NVTX steps and phases,
// CUPTI device time).
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "exporters/multinode/digest_codec.h"
#include "hang_detector/decision/correlator.h"
#include "hang_detector/ingest/rank_digest.h"
#include "hang_detector/verdicts/verdict_json.h"
#include "hang_detector/verdicts/verdict_text.h"
#include "tests/hang_detector/job_builder.h"
#include "tests/hang_detector/nvtx_records.h"

namespace {

namespace hd = ncclscope::hang_detector;
namespace ex = ncclscope::exporters;
using ncclscope::testing::Done;
using ncclscope::testing::JobBuilder;
using ncclscope::trace::OpType;

const int64_t kReceived = JobBuilder::Wall(30);

std::string DigestOf(const ncclscope::trace::TraceSet& set, const hd::DigestLimits& limits) {
  std::vector<hd::DigestCut> cuts;
  for (const auto& s : set.files) {
    hd::RankFile f;
    hd::RankFileBuilder b(&f);
    b.BeginFile(s);
    b.Records(s.records.data(), s.records.size());
    b.EndFile(s);
    cuts.push_back(hd::CutForDigest(f, limits));
  }
  std::vector<ex::DigestRank> ranks;
  for (const hd::DigestCut& c : cuts) {
    ranks.push_back({&c.file, hd::ProcessState::kRunning, c.omitted});
  }
  ex::DigestHeader h;
  h.host = "node-a";
  h.built_at_ns = h.produced_at_ns = JobBuilder::Wall(29);
  h.unreadable = {"node-a:/trace/x.ring: bad magic"};
  return ex::EncodeNodeDigest(h, ranks);
}

std::string DigestOf(const JobBuilder& job, const hd::DigestLimits& limits) {
  return DigestOf(job.Build(), limits);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  ex::DecodedDigest d;
  std::string error;
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  if (!ex::DecodeNodeDigest(bytes, "fuzz", kReceived, &d, &error)) {
    if (error.rfind("fuzz: ", 0) != 0) __builtin_trap();
    return 0;
  }
  for (const hd::RankFile& f : d.files) {
    if (!f.remote.has_value() || f.remote->source != "fuzz") __builtin_trap();
  }
  const hd::JobIndex index = hd::JobIndex::FromFiles(std::move(d.files), {});
  hd::AnalyzeOptions o;
  o.now_wall_ns = kReceived;
  const hd::Analysis a = hd::Analyze(index, o);
  if (a.usable && a.verdicts.empty()) __builtin_trap();
  if (hd::RenderText(a, true).empty() || hd::RenderJson(a, 0).empty()) __builtin_trap();
  return 0;
}

extern "C" void FuzzSeeds(std::vector<std::string>* seeds) {
  JobBuilder job(4);
  const uint64_t world = job.Comm("world", {0, 1, 2, 3});
  const uint64_t pp = job.Comm("pp", {0, 1}, world, 1);
  for (int r = 0; r < 4; ++r) {
    job.ProfilerAttach(r, world, 0.01);
    for (int i = 0; i < 40; ++i) {
      job.Coll(r, world, OpType::kAllReduce, 0.1 + i * 0.01, Done::kCompleted);
      job.DeviceStart(r, world, i + 1, 0.1 + i * 0.01);
    }
  }
  job.Send(0, pp, 1, 1.0, Done::kPending);
  job.Recv(1, pp, 0, 1.0, Done::kCompleted);
  for (int r = 0; r < 3; ++r) job.Coll(r, world, OpType::kAllReduce, 2.0, Done::kPending);
  job.DeviceStart(0, world, 41, 2.0);
  job.SplitInCall(3, world, 2, 1, 2.5);
  job.Wrap(2, 30);
  job.Host(1, "node-b");
  job.HeartbeatAll(5);
  seeds->push_back(DigestOf(job, {}));
  hd::DigestLimits small;
  small.per_comm = 2;
  small.per_pair = 1;
  small.newest = 3;
  seeds->push_back(DigestOf(job, small));

  JobBuilder untracked(2);
  const uint64_t w = untracked.Comm("world", {0, 1});
  for (int i = 0; i < 20; ++i) {
    untracked.Coll(0, w, OpType::kBroadcast, 0.1 * i, Done::kUntracked, 64, 7, 0);
    untracked.Coll(1, w, OpType::kBroadcast, 0.1 * i, Done::kUntracked, 64, 7, 0);
  }
  untracked.Finished(1);
  seeds->push_back(DigestOf(untracked, {}));

  // NVTX contexts (steps, phases and their names), with a rank stuck in another phase.
  JobBuilder steps(2);
  const uint64_t sw = steps.Comm("world", {0, 1});
  for (int i = 0; i < 12; ++i) {
    for (int r = 0; r < 2; ++r) {
      steps.Coll(r, sw, OpType::kAllReduce, 0.1 * i, Done::kCompleted).reserved =
          ncclscope::testing::NvtxWord(i / 3, 1 + i % 2);
    }
  }
  steps.Coll(0, sw, OpType::kAllReduce, 2.0, Done::kPending).reserved =
      ncclscope::testing::NvtxWord(4, 2);
  steps.HeartbeatAll(5);
  ncclscope::trace::TraceSet set = steps.Build();
  ncclscope::testing::AddNameRecords(&set, {{1, "backward", "layer1"}, {2, "optimizer", ""}});
  seeds->push_back(DigestOf(set, {}));

  // NCCLSCOPE_CUPTI's device_compute records after each collective (trace/record.h), one with an
  // unknown stretch; cut so that the older ones go.
  JobBuilder device(2);
  const uint64_t dw = device.Comm("world", {0, 1});
  for (int i = 0; i < 24; ++i) {
    for (int r = 0; r < 2; ++r) {
      device.Coll(r, dw, OpType::kAllReduce, 0.1 * i, Done::kCompleted);
      ncclscope::trace::RecordData& c =
          device.ProbeRecord(r, dw, OpType::kDeviceCompute, 0.1 * i + 0.05);
      c.seq = static_cast<uint64_t>(i) + 1;
      c.redop = static_cast<int32_t>(OpType::kAllReduce);
      c.peer = 1;
      c.count = r == 1 ? 40'000'000 : 20'000'000;
      c.aux = 1000 + static_cast<uint64_t>(i);
      c.recv_buffer = i == 7 ? 0 : 1;
    }
  }
  device.HeartbeatAll(3);
  hd::DigestLimits recent;
  recent.per_comm = 8;
  recent.newest = 4;
  seeds->push_back(DigestOf(device, recent));
}
