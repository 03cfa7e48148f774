#include "tests/watchdog/hung_rings.h"

#include "trace/clock.h"
#include "trace/ring_layout.h"

namespace ncclscope::testing {
namespace {

constexpr int64_t kOpNs = 1'000'000;  // 1 ms between two allreduces of a rank

trace::RecordData Allreduce(uint64_t comm, uint64_t seq, int64_t t) {
  trace::RecordData r{};
  r.comm_id = comm;
  r.seq = seq;
  r.count = 1 << 20;
  r.stream = 0x7000;
  r.t_enter_ns = t;
  r.t_exit_ns = t + 20'000;
  r.op = static_cast<uint32_t>(trace::OpType::kAllReduce);
  r.dtype = 7;  // float32
  r.redop = 0;  // sum
  r.peer = -1;
  r.flags = trace::kFlagCompletionTracked;
  return r;
}

}  // namespace

bool WriteHungJob(const std::string& dir, const HungJobOptions& o, HungJob* job,
                  std::string* error) {
  job->culprit = o.culprit;
  job->world_id = 0x5eed000000000001ULL;
  const auto records = static_cast<uint64_t>(static_cast<double>(o.capacity) * o.laps);
  const int64_t now = trace::MonotonicNs();
  // The stuck allreduce began 30 s ago; the ones before it, 1 ms apart.
  const int64_t t_stuck = now - 30'000'000'000LL;
  const int64_t t0 = t_stuck - static_cast<int64_t>(records) * kOpNs;
  for (int rank = 0; rank < o.ranks; ++rank) {
    trace::RingOptions ro;
    ro.dir = dir;
    ro.record_capacity = o.capacity;
    ro.global_rank = rank;
    ro.local_rank = rank;
    ro.world_size = o.ranks;
    ro.job_id = o.job;
    ro.host = "node0";
    auto w = trace::RingWriter::Create(ro, error);
    if (w == nullptr) return false;
    trace::CommInfo c;
    c.id = job->world_id;
    c.origin = trace::kCommFromUniqueId;
    c.rank = rank;
    c.nranks = o.ranks;
    c.cuda_device = rank;
    c.created_monotonic_ns = t0 - 1'000'000'000LL;
    c.handle = 0x1000 + static_cast<uint64_t>(rank);
    c.name = "world";
    w->AddComm(c);
    for (uint64_t i = 0; i < records; ++i) {
      const int64_t t = t0 + static_cast<int64_t>(i) * kOpNs;
      const uint64_t slot = w->Append(Allreduce(job->world_id, i + 1, t), true);
      w->CompleteDevice(slot, t + 500'000);
    }
    uint64_t stuck = UINT64_MAX;
    if (rank != o.culprit) stuck = w->Append(Allreduce(job->world_id, records + 1, t_stuck), true);
    w->Heartbeat(trace::MonotonicNs());
    job->stuck_slots.push_back(stuck);
    job->writers.push_back(std::move(w));
  }
  return true;
}

void AppendCompleted(HungJob* job, int rank) {
  trace::RingWriter& w = *job->writers[static_cast<size_t>(rank)];
  const int64_t t = trace::MonotonicNs();
  // A record of its own communicator-less kind would not move the world's sequence: an allreduce
  // on the world far past the stuck one keeps the test about the reader, not the verdict.
  const uint64_t slot = w.Append(Allreduce(job->world_id, 1u << 30, t), true);
  w.CompleteDevice(slot, t + 1000);
}

}  // namespace ncclscope::testing
