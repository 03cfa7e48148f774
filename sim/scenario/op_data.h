// Buffers of one op on one rank: sizes by NCCL's count semantics, send data from the pattern,
// and the check of what arrived against what the pattern says every peer sent.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "sim/scenario/alltoallv_split.h"
#include "sim/scenario/data_pattern.h"
#include "sim/scenario/scenario.h"

namespace ncclscope::sim {

// What one rank actually issues for one op, after faults changed it.
struct OpCall {
  OpKind kind = OpKind::kAllReduce;
  int comm = 0;  // index in JobLayout::comms()
  size_t count = 0;
  ncclDataType_t dtype = ncclFloat32;
  RedOp redop = RedOp::kSum;
  double scalar = 1.0;
  int root = 0;
  PipeDirection direction = PipeDirection::kForward;
  bool grouped = true;
  int peer_shift = 0;         // pipeline: added to the send peer (wrong_peer)
  bool send_first = false;    // ungrouped pipeline: send before receiving (send_first)
  bool in_place = false;      // alltoall, gather, scatter (OpSpec::in_place)
  bool equal_counts = false;  // alltoallv (OpSpec::equal_counts)
  bool captured = false;      // OpSpec::captured
};

OpCall callFromSpec(const OpSpec& spec, int comm_index);

// Owns host buffers for one op instance on one rank. Not thread-safe.
struct OpBuffers {
  std::vector<unsigned char> send;
  std::vector<unsigned char> recv;
  size_t send_count = 0;  // elements
  size_t recv_count = 0;
  int send_peer = -1;  // pipeline only, comm ranks; -1 = none
  int recv_peer = -1;
  bool send_first = false;  // ungrouped: issue the send before the receive
  // In place (alltoall everywhere, gather and scatter at the root): `recv` is the one buffer,
  // holding the input; the call's sendbuff is recv + in_offset, its recvbuff recv + recv_offset
  // (elements), where the result is checked.
  bool in_place = false;
  size_t in_offset = 0;
  size_t recv_offset = 0;
  // alltoallv: each peer's part of `send` and `recv`. `recv` ends with kGuardBytes of 0xff past
  // the last part, which no receive may write.
  AlltoallvSplit split;
};

// Bytes of 0xff after an alltoallv's receive buffer: a receive longer than its part shows there.
inline constexpr size_t kGuardBytes = 16;

// Sizes the buffers for rank `me` of a communicator of `n` ranks, fills the send buffer from the
// pattern and the receive buffer with 0xff bytes (no dtype's pattern value looks like that).
OpBuffers prepareBuffers(const OpCall& call, const PatternKey& key, int me, int n);

// First element of the receive buffer that differs from the pattern, as a message naming offset,
// got and expected (alltoallv: also the part's source rank, and any written guard byte); nullopt
// when all is right or the op leaves this rank's buffer undefined. With `non_finite`, elements
// holding NaN or Inf (where an injected NaN reached) are counted there instead of compared.
std::optional<std::string> checkResult(const OpCall& call, const PatternKey& key, int me, int n,
                                       const OpBuffers& buffers, size_t* non_finite = nullptr);

// Whether the op writes this rank's receive buffer (not a Reduce or Gather off the root, nor a
// pipeline stage without a previous one).
bool outputDefined(const OpCall& call, int me, const OpBuffers& buffers);

}  // namespace ncclscope::sim
