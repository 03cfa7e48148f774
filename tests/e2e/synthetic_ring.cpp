#include "tests/e2e/synthetic_ring.h"

#include <gtest/gtest.h>

#include "trace/clock.h"
#include "trace/ring_writer.h"

namespace ncclscope::testing {

std::string WriteSyntheticRing(const std::string& dir, int rank, int world_size, int collectives) {
  constexpr uint64_t kWorld = 0x5eed;
  trace::RingOptions o;
  o.dir = dir;
  o.record_capacity = 256;
  o.comm_capacity = 4;
  o.global_rank = rank;
  o.world_size = world_size;
  o.job_id = "synthetic";
  std::string error;
  const auto w = trace::RingWriter::Create(o, &error);
  EXPECT_NE(w, nullptr) << error;
  if (w == nullptr) return "";
  trace::CommInfo c;
  c.id = kWorld;
  c.rank = rank;
  c.nranks = world_size;
  c.name = "world";
  w->AddComm(c);
  const int64_t now = trace::MonotonicNs();
  for (int i = 0; i < collectives; ++i) {
    trace::RecordData r{};
    r.comm_id = kWorld;
    r.seq = static_cast<uint64_t>(i) + 1;
    r.op = static_cast<uint32_t>(trace::OpType::kAllReduce);
    r.count = 256;
    r.dtype = 7;  // float32
    r.redop = 0;  // sum
    r.peer = -1;
    r.t_enter_ns = now - 1000000;
    r.t_exit_ns = now - 900000;
    w->CompleteDevice(w->Append(r, true), now - 500000);
  }
  w->Heartbeat(now);
  w->SetFlags(trace::kHeaderFinished);
  return w->path();
}

}  // namespace ncclscope::testing
