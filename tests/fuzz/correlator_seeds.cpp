// Seeds for the correlator fuzz target: small jobs written by the real trace writer, one per
// verdict family (a rank that never issued a collective, a desync with send/recv left unmatched,
// creations nobody finished, a wrapped healthy job, a straggler, a device that never started, a
// stall whose stage the profiler's proxy progress names, a hang and a straggler whose calls carry
// NVTX steps and phases, a NaN's origin and a corrupt output from numerics records, a rank seen
// only through its presence file).
#include <algorithm>
#include <cstring>
#include <fstream>
#include <iterator>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "tests/fuzz/ring_set_codec.h"
#include "tests/trace/temp_dir.h"
#include "trace/numerics_record.h"
#include "trace/ring_writer.h"

namespace {

using namespace ncclscope::trace;

constexpr uint64_t kWorld = 0x1001;
constexpr uint64_t kTp = 0x2002;
constexpr int32_t kFloat32 = 7;
constexpr int32_t kSum = 0;

enum class Done { kCompleted, kPending, kUntracked };

// One rank's writer; times are seconds since its file was created.
class Rank {
 public:
  Rank(const std::string& dir, int rank, int world_size) {
    RingOptions o;
    o.dir = dir;
    o.record_capacity = ncclscope::fuzz::kRecordCapacity;
    o.comm_capacity = ncclscope::fuzz::kCommCapacity;
    o.global_rank = rank;
    o.world_size = world_size;
    o.job_id = "fuzz";
    std::string error;
    w_ = RingWriter::Create(o, &error);
    if (w_) t0_ = w_->header().start_monotonic_ns;
  }
  bool ok() const { return w_ != nullptr; }

  void Comm(uint64_t id, int rank, int nranks, const char* name, uint64_t parent = 0) {
    CommInfo c;
    c.id = id;
    c.parent_id = parent;
    c.origin = parent != 0 ? kCommFromSplit : kCommFromUniqueId;
    c.rank = rank;
    c.nranks = nranks;
    c.name = name;
    w_->AddComm(c);
  }
  // nvtx: the call's NVTX context word (trace/record.h: step and context id), 0 for none.
  void Coll(uint64_t comm, uint64_t seq, OpType op, double t, Done done, uint32_t nvtx = 0) {
    RecordData r = Base(comm, seq, op, t);
    r.count = 256;
    r.dtype = kFloat32;
    r.redop = op == OpType::kAllReduce ? kSum : -1;
    r.reserved = nvtx;
    Emit(r, done, t);
  }
  // The names of NVTX context `id`, as the probe writes them before their first use.
  void NvtxNames(uint32_t id, const std::string& phase, const std::string& range, double t) {
    for (const auto& [op, name] :
         {std::pair{OpType::kNvtxPhaseName, &phase}, std::pair{OpType::kNvtxRangeName, &range}}) {
      RecordData r = Base(0, id, op, t);
      std::memcpy(reinterpret_cast<char*>(&r.group_id), name->data(),
                  std::min(name->size(), kNvtxNameBytes - 1));
      r.t_device_done_ns = kDoneUntracked;
      w_->Append(r, false);
    }
  }
  void P2P(uint64_t comm, uint64_t seq, OpType op, int peer, double t, Done done) {
    RecordData r = Base(comm, seq, op, t);
    r.count = 128;
    r.dtype = kFloat32;
    r.peer = peer;
    Emit(r, done, t);
  }
  // A creation still inside its call.
  void InitInCall(uint64_t child, int rank, int nranks, double t) {
    RecordData r = Base(child, 0, OpType::kCommInitRank, t);
    r.aux = static_cast<uint64_t>(rank) << 32 | static_cast<uint32_t>(nranks);
    r.result = kResultInCall;
    r.t_exit_ns = 0;
    w_->Append(r, false);
  }
  void SplitInCall(uint64_t parent, uint32_t index, int color, double t) {
    RecordData r = Base(parent, index, OpType::kCommSplit, t);
    r.aux = static_cast<uint64_t>(static_cast<uint32_t>(color)) << 32;
    r.result = kResultInCall;
    r.t_exit_ns = 0;
    w_->Append(r, false);
  }
  void Profiler(uint64_t comm, OpType op, uint64_t seq, double t) {
    RecordData r = Base(comm, seq, op, t);
    r.count = 5;
    w_->Append(r, false);
  }
  // What the CUPTI probe writes for the NCCL kernel of collective #seq (trace/record.h).
  void DeviceCompute(uint64_t comm, uint64_t seq, uint64_t compute_ns, double t) {
    RecordData r = Base(comm, seq, OpType::kDeviceCompute, t);
    r.count = compute_ns;
    r.redop = static_cast<int32_t>(OpType::kAllReduce);
    r.peer = compute_ns != 0 ? 1 : 0;
    r.aux = At(t);
    r.send_buffer = At(t) + 1000;
    r.recv_buffer = seq > 1 ? At(t) - 100000000 : 0;
    w_->Append(r, false);
  }
  // The profiler's proxy_progress of operation `op` #seq: one (channel, peer, side) waiting in
  // NCCL step state `state` (trace/record.h).
  void Proxy(uint64_t comm, uint64_t seq, OpType op, int peer, bool send, int state, double t) {
    RecordData r = Base(comm, seq, OpType::kProxyProgress, t);
    r.peer = peer;
    r.dtype = 1;
    r.redop = state;
    r.count = uint64_t{1} << 32;
    r.aux = uint64_t{1} << 32;
    r.group_id = static_cast<uint64_t>(At(t));
    r.stream = (send ? kProxySend : 0) | uint64_t{4} << 8 | static_cast<uint64_t>(op) << 32;
    w_->Append(r, false);
  }
  // A send's (receive's) device start.
  void P2PStart(uint64_t comm, uint64_t seq, int peer, bool send, double t) {
    RecordData r = Base(comm, seq, OpType::kP2pDeviceStart, t);
    r.peer = peer;
    r.redop = static_cast<int32_t>(send ? OpType::kSend : OpType::kRecv);
    r.dtype = 0;
    w_->Append(r, false);
  }
  // What NCCLSCOPE_NUMERICS writes after sampled collective #seq: its input scan and output hash.
  void Numerics(uint64_t comm, uint64_t seq, uint64_t nan, uint64_t hash, double t) {
    NumericsSample s;
    s.comm_id = comm;
    s.seq = seq;
    s.op = OpType::kAllReduce;
    s.dtype = kFloat32;
    s.scanned = s.hashed = true;
    s.nan_count = nan;
    s.first_nonfinite = nan > 0 ? 3 : kNumericsNone;
    s.hash = hash;
    s.hash_bytes = 1024;
    s.hash_version = 1;
    RecordData r = EncodeNumerics(s);
    r.t_enter_ns = r.t_exit_ns = At(t);
    w_->Append(r, false);
  }
  void Heartbeat(double t) { w_->Heartbeat(At(t)); }
  void Finished() { w_->SetFlags(kHeaderFinished); }
  // What a presence file says (trace/ring_layout.h): started as the rank, no NCCL call yet. In the
  // seeds' geometry, so mutations reach it as any ring; the readers go by the flag.
  void Presence() { w_->SetFlags(kHeaderPresence); }
  std::string Compact() const {
    std::ifstream in(w_->path(), std::ios::binary);
    return ncclscope::fuzz::CompactRing(
        std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()));
  }

 private:
  int64_t At(double t) const { return t0_ + static_cast<int64_t>(t * 1e9); }
  RecordData Base(uint64_t comm, uint64_t seq, OpType op, double t) const {
    RecordData r{};
    r.comm_id = comm;
    r.seq = seq;
    r.op = static_cast<uint32_t>(op);
    r.dtype = r.redop = r.peer = -1;
    r.stream = 0x1000 + comm % 97;
    r.t_enter_ns = At(t);
    r.t_exit_ns = At(t) + 20000;
    return r;
  }
  void Emit(const RecordData& r, Done done, double t) {
    const uint64_t slot = w_->Append(r, done != Done::kUntracked);
    if (done == Done::kCompleted) w_->CompleteDevice(slot, At(t) + 1000000);
  }

  std::unique_ptr<RingWriter> w_;
  int64_t t0_ = 0;
};

std::vector<Rank> Job(const std::string& dir, int n) {
  std::vector<Rank> ranks;
  for (int r = 0; r < n; ++r) {
    ranks.emplace_back(dir, r, n);
    ranks.back().Comm(kWorld, r, n, "world");
  }
  return ranks;
}

void Add(std::vector<Rank>& ranks, double heartbeat, uint8_t options,
         std::vector<std::string>* seeds) {
  std::vector<std::string> compact;
  for (Rank& r : ranks) {
    if (!r.ok()) return;
    r.Heartbeat(heartbeat);
    compact.push_back(r.Compact());
  }
  seeds->push_back(ncclscope::fuzz::EncodeRingSet(compact, options));
}

}  // namespace

extern "C" void FuzzSeeds(std::vector<std::string>* seeds) {
  {  // NVTX: steps 1-20 of backward and optimizer allreduces; rank 1 is late to the backward ones
     // and never issues step 21's, where rank 0 waits in the optimizer's.
    ncclscope::testing::TempDir tmp;
    auto ranks = Job(tmp.path(), 2);
    for (int r = 0; r < 2; ++r) {
      ranks[r].NvtxNames(1, "backward", "layer7", 0.01);
      ranks[r].NvtxNames(2, "optimizer", "clip_grad", 0.01);
    }
    uint64_t seq = 0;
    for (uint64_t step = 1; step <= 20; ++step) {
      ++seq;
      for (int r = 0; r < 2; ++r) {
        ranks[r].Coll(kWorld, seq, OpType::kAllReduce, 0.1 * step + (r == 1 ? 0.03 : 0),
                      Done::kCompleted, NvtxReservedWord(NvtxStepField(step), 1));
      }
      ++seq;
      for (int r = 0; r < 2; ++r) {
        ranks[r].Coll(kWorld, seq, OpType::kAllReduce, 0.1 * step + 0.05, Done::kCompleted,
                      NvtxReservedWord(NvtxStepField(step), 2));
      }
    }
    ranks[0].Coll(kWorld, seq + 1, OpType::kAllReduce, 2.5, Done::kPending,
                  NvtxReservedWord(NvtxStepField(21), 2));
    Add(ranks, 10, 0x00, seeds);
  }
  {  // Rank 3 never issues world allreduce #3; ranks 0-1 also share a split "tp".
    ncclscope::testing::TempDir tmp;
    auto ranks = Job(tmp.path(), 4);
    for (int r = 0; r < 2; ++r) ranks[r].Comm(kTp, r, 2, "tp", kWorld);
    for (int r = 0; r < 4; ++r) {
      ranks[r].Coll(kWorld, 1, OpType::kAllReduce, 0.1, Done::kCompleted);
      ranks[r].Coll(kWorld, 2, OpType::kAllReduce, 0.2, Done::kCompleted);
    }
    for (int r = 0; r < 2; ++r) ranks[r].Coll(kTp, 1, OpType::kAllGather, 0.3, Done::kCompleted);
    for (int r = 0; r < 3; ++r) ranks[r].Coll(kWorld, 3, OpType::kAllReduce, 1.0, Done::kPending);
    Add(ranks, 10, 0x04, seeds);
  }
  {  // Allreduce against allgather at #2; a send without its receive; a receive-send cycle.
    ncclscope::testing::TempDir tmp;
    auto ranks = Job(tmp.path(), 2);
    for (int r = 0; r < 2; ++r) ranks[r].Coll(kWorld, 1, OpType::kAllReduce, 0.1, Done::kCompleted);
    ranks[0].Coll(kWorld, 2, OpType::kAllReduce, 0.5, Done::kPending);
    ranks[1].Coll(kWorld, 2, OpType::kAllGather, 0.5, Done::kPending);
    ranks[0].P2P(kWorld, 1, OpType::kSend, 1, 0.6, Done::kCompleted);
    ranks[1].P2P(kWorld, 1, OpType::kRecv, 0, 0.6, Done::kCompleted);
    ranks[0].P2P(kWorld, 2, OpType::kSend, 1, 0.7, Done::kPending);
    ranks[1].P2P(kWorld, 1, OpType::kSend, 0, 0.7, Done::kPending);
    Add(ranks, 10, 0x06, seeds);
  }
  {  // Ranks 0-1 inside a creation rank 2 never joined; ranks 0 and 2 inside a split of world.
    ncclscope::testing::TempDir tmp;
    auto ranks = Job(tmp.path(), 3);
    for (int r = 0; r < 3; ++r) ranks[r].Coll(kWorld, 1, OpType::kAllReduce, 0.1, Done::kCompleted);
    ranks[0].SplitInCall(kWorld, 1, 0, 0.2);
    ranks[2].SplitInCall(kWorld, 1, 0, 0.2);
    ranks[0].InitInCall(0x3003, 0, 3, 0.3);
    ranks[1].InitInCall(0x3003, 1, 3, 0.3);
    Add(ranks, 10, 0x0c, seeds);
  }
  {  // Ranks 0-2 inside the creation of world; rank 3 never called NCCL (a presence file only),
     // rank 1 has a wrapper's presence file too, and a launcher claims rank 0 of a 2-rank job.
    ncclscope::testing::TempDir tmp;
    std::vector<Rank> ranks;
    for (int r = 0; r < 3; ++r) {
      ranks.emplace_back(tmp.path(), r, 4);
      ranks.back().InitInCall(0x3003, r, 4, 0.2);
    }
    for (const auto& [rank, size] : {std::pair{3, 4}, std::pair{1, 4}, std::pair{0, 2}}) {
      ranks.emplace_back(tmp.path(), rank, size);
      ranks.back().Presence();
    }
    Add(ranks, 10, 0x04, seeds);
  }
  {  // Healthy and wrapped: 80 allreduces in 64 slots; rank 1 has exited.
    ncclscope::testing::TempDir tmp;
    auto ranks = Job(tmp.path(), 2);
    for (int r = 0; r < 2; ++r) {
      for (uint64_t s = 1; s <= 80; ++s) {
        ranks[r].Coll(kWorld, s, OpType::kAllReduce, 0.01 * s, Done::kCompleted);
      }
    }
    ranks[1].Finished();
    Add(ranks, 1, 0x01, seeds);
  }
  {  // Rank 2 arrives 50 ms after the others at every allreduce.
    ncclscope::testing::TempDir tmp;
    auto ranks = Job(tmp.path(), 4);
    for (uint64_t s = 1; s <= 30; ++s) {
      for (int r = 0; r < 4; ++r) {
        ranks[r].Coll(kWorld, s, OpType::kAllReduce, 0.1 * s + (r == 2 ? 0.05 : 0),
                      Done::kCompleted);
      }
    }
    Add(ranks, 3.1, 0x00, seeds);
  }
  {  // As above, late on the host; the CUPTI probe says rank 2's GPU computes 50 ms longer.
    ncclscope::testing::TempDir tmp;
    auto ranks = Job(tmp.path(), 4);
    for (uint64_t s = 1; s <= 30; ++s) {
      for (int r = 0; r < 4; ++r) {
        const double t = 0.1 * s + (r == 2 ? 0.05 : 0);
        ranks[r].Coll(kWorld, s, OpType::kAllReduce, t, Done::kCompleted);
        ranks[r].DeviceCompute(kWorld, s, r == 2 ? 80000000 : 30000000, t + 0.001);
      }
    }
    Add(ranks, 3.1, 0x00, seeds);
  }
  {  // Both ranks issued #1; the profiler saw its device work start on rank 0 only.
    ncclscope::testing::TempDir tmp;
    auto ranks = Job(tmp.path(), 2);
    for (int r = 0; r < 2; ++r) {
      ranks[r].Profiler(kWorld, OpType::kProfilerAttach, 0, 0.05);
      ranks[r].Coll(kWorld, 1, OpType::kAllReduce, 0.1, Done::kPending);
    }
    ranks[0].Profiler(kWorld, OpType::kDeviceStart, 1, 0.11);
    Add(ranks, 10, 0x14, seeds);
  }
  {  // Every member started #1; rank 0's send to 1 is on the wire, 1's receive waits for it; a
     // send/recv pair of both started, stuck the same way (the stage of a stall).
    ncclscope::testing::TempDir tmp;
    auto ranks = Job(tmp.path(), 2);
    for (int r = 0; r < 2; ++r) {
      ranks[r].Profiler(kWorld, OpType::kProfilerAttach, 0, 0.05);
      ranks[r].Coll(kWorld, 1, OpType::kAllReduce, 0.1, Done::kPending);
      ranks[r].Profiler(kWorld, OpType::kDeviceStart, 1, 0.11);
    }
    ranks[0].Proxy(kWorld, 1, OpType::kAllReduce, 1, true, 9, 0.5);
    ranks[1].Proxy(kWorld, 1, OpType::kAllReduce, 0, false, 10, 0.5);
    ranks[0].P2P(kWorld, 1, OpType::kSend, 1, 0.6, Done::kPending);
    ranks[1].P2P(kWorld, 1, OpType::kRecv, 0, 0.6, Done::kPending);
    ranks[0].P2PStart(kWorld, 1, 1, true, 0.61);
    ranks[1].P2PStart(kWorld, 1, 0, false, 0.61);
    ranks[0].Proxy(kWorld, 1, OpType::kSend, 1, true, 9, 0.7);
    ranks[1].Proxy(kWorld, 1, OpType::kRecv, 0, false, 10, 0.7);
    Add(ranks, 10, 0x14, seeds);
  }
  {  // Numerics: rank 2 feeds a NaN into #4 (everyone's input holds one from #5); rank 3's output
     // hash of #6 differs from the others'.
    ncclscope::testing::TempDir tmp;
    auto ranks = Job(tmp.path(), 4);
    for (uint64_t s = 1; s <= 8; ++s) {
      for (int r = 0; r < 4; ++r) {
        ranks[r].Coll(kWorld, s, OpType::kAllReduce, 0.1 * s, Done::kCompleted);
        if (s % 2 != 0) continue;
        const uint64_t nan = (r == 2 && s >= 4) || s >= 5 ? 1 : 0;
        ranks[r].Numerics(kWorld, s, nan, r == 3 && s == 6 ? 0xbad : 0x600d + s, 0.1 * s + 0.01);
      }
    }
    Add(ranks, 1, 0x00, seeds);
  }
}
