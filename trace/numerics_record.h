// The numerics record (OpType::kNumerics): what NCCLSCOPE_NUMERICS found in one sampled
// collective of this rank, written by the probe once the collective (and the passes around it)
// completed on the device. Field use in trace::RecordData:
//   comm_id, seq   the collective's (its per-communicator sequence number)
//   redop          the collective's OpType;  dtype  its ncclDataType_t
//   peer           kNumerics* bits: what was done (a pass not done says nothing either way)
//   count          NaN elements in the input (scanned: the send buffer before NCCL ran)
//   aux            Inf elements in the input
//   send_buffer    element index of the first NaN or Inf in the input; kNumericsNone: none
//   recv_buffer    the content hash of the output (collectives/numerics/numerics_hash.h)
//   group_id       bytes hashed (the output's length)
//   stream         the hash's version (collectives::kContentHashVersion) when hashed, else 0
//   t_enter_ns = t_exit_ns  when the probe wrote it; t_device_done_ns untracked; tid the writer
// Values are stored in files: append only, never renumber.
#pragma once

#include <cstdint>

#include "trace/record.h"

namespace ncclscope::trace {

inline constexpr int32_t kNumericsScanned = 1 << 0;  // the input was scanned for NaN/Inf
inline constexpr int32_t kNumericsHashed = 1 << 1;   // the output was hashed
inline constexpr uint64_t kNumericsNone = ~0ull;     // no NaN/Inf in the scanned input

// One numerics record decoded.
struct NumericsSample {
  uint64_t comm_id = 0;
  uint64_t seq = 0;
  OpType op = OpType::kUnknown;  // the collective
  int32_t dtype = -1;
  bool scanned = false;
  bool hashed = false;
  uint64_t nan_count = 0;
  uint64_t inf_count = 0;
  uint64_t first_nonfinite = kNumericsNone;
  uint64_t hash = 0;
  uint64_t hash_bytes = 0;
  uint32_t hash_version = 0;

  bool Poisoned() const { return scanned && nan_count + inf_count > 0; }
};

// The fields of a numerics record: op and what the sample holds; times and tid are the writer's to
// set. Pure.
inline RecordData EncodeNumerics(const NumericsSample& s) {
  RecordData d{};
  d.op = static_cast<uint32_t>(OpType::kNumerics);
  d.comm_id = s.comm_id;
  d.seq = s.seq;
  d.redop = static_cast<int32_t>(s.op);
  d.dtype = s.dtype;
  d.peer = (s.scanned ? kNumericsScanned : 0) | (s.hashed ? kNumericsHashed : 0);
  d.count = s.scanned ? s.nan_count : 0;
  d.aux = s.scanned ? s.inf_count : 0;
  d.send_buffer = s.scanned ? s.first_nonfinite : kNumericsNone;
  d.recv_buffer = s.hashed ? s.hash : 0;
  d.group_id = s.hashed ? s.hash_bytes : 0;
  d.stream = s.hashed ? s.hash_version : 0;
  d.t_device_done_ns = kDoneUntracked;
  return d;
}

// The sample a numerics record holds; any record of another op decodes as nothing scanned or
// hashed. Pure.
inline NumericsSample DecodeNumerics(const RecordData& d) {
  NumericsSample s;
  if (d.op != static_cast<uint32_t>(OpType::kNumerics)) return s;
  s.comm_id = d.comm_id;
  s.seq = d.seq;
  s.op = static_cast<OpType>(static_cast<uint16_t>(d.redop));
  s.dtype = d.dtype;
  s.scanned = (d.peer & kNumericsScanned) != 0;
  s.hashed = (d.peer & kNumericsHashed) != 0;
  if (s.scanned) {
    s.nan_count = d.count;
    s.inf_count = d.aux;
    s.first_nonfinite = d.send_buffer;
  }
  if (s.hashed) {
    s.hash = d.recv_buffer;
    s.hash_bytes = d.group_id;
    s.hash_version = static_cast<uint32_t>(d.stream);
  }
  return s;
}

// Whether NCCL makes the output of `op` bitwise identical on every rank, so hashes compare across
// ranks: AllReduce, AllGather and Broadcast. ReduceScatter's output is each rank's own block and
// Reduce's exists on the root only: their hashes are recorded, never compared.
inline bool OutputIdenticalOnEveryRank(OpType op) {
  return op == OpType::kAllReduce || op == OpType::kAllGather || op == OpType::kBroadcast;
}

}  // namespace ncclscope::trace
