// Numerics records in synthetic jobs (trace/numerics_record.h), written as the probe writes them:
// after the sampled collective's own record, at the same sequence number on every rank.
#pragma once

#include <cstdint>

#include "tests/hang_detector/job_builder.h"
#include "trace/numerics_record.h"

namespace ncclscope::testing {

// What one rank's sample of one collective held.
struct Held {
  bool scanned = true;
  uint64_t nan = 0;
  uint64_t inf = 0;
  bool hashed = false;
  uint64_t hash = 0x1111;
  uint64_t bytes = 1024;
  uint32_t version = 1;
};

// A numerics record of `rank` for collective #seq of `comm` (float32), at job time t. A poisoned
// input's first non-finite element is at 64 x rank, so evidence lines tell ranks apart.
inline void AddSample(JobBuilder* job, int rank, uint64_t comm, uint64_t seq, trace::OpType op,
                      double t, const Held& h) {
  trace::NumericsSample s;
  s.comm_id = comm;
  s.seq = seq;
  s.op = op;
  s.dtype = kFloat32;
  s.scanned = h.scanned;
  s.nan_count = h.nan;
  s.inf_count = h.inf;
  s.first_nonfinite = h.nan + h.inf > 0 ? 64 * static_cast<uint64_t>(rank) : trace::kNumericsNone;
  s.hashed = h.hashed;
  s.hash = h.hash;
  s.hash_bytes = h.bytes;
  s.hash_version = h.version;
  const trace::RecordData e = trace::EncodeNumerics(s);
  // The builder stamps times and a stream; the record's own fields are the encoder's.
  trace::RecordData& r = job->ProbeRecord(rank, comm, trace::OpType::kNumerics, t);
  r.seq = e.seq;
  r.redop = e.redop;
  r.dtype = e.dtype;
  r.peer = e.peer;
  r.count = e.count;
  r.aux = e.aux;
  r.send_buffer = e.send_buffer;
  r.recv_buffer = e.recv_buffer;
  r.group_id = e.group_id;
  r.stream = e.stream;
}

}  // namespace ncclscope::testing
