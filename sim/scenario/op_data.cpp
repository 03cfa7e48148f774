#include "sim/scenario/op_data.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstddef>

#include "sim/scenario/dtype_codec.h"
#include "sim/scenario/names.h"

namespace ncclscope::sim {
namespace {

PatternShape shapeOf(const OpCall& c, int n) {
  return PatternShape{c.kind, c.redop, c.dtype, c.redop == RedOp::kPreMulSum ? c.scalar : 1.0, n};
}

// NCCL's in-place forms: AlltoAll with sendbuff == recvbuff; at the root, a Gather whose
// sendbuff is its own slot of recvbuff (recvbuff + root x count) and a Scatter whose recvbuff is
// its own slot of sendbuff. Elsewhere a Gather or Scatter has no in-place form.
void makeInPlace(const OpCall& c, int me, size_t es, OpBuffers* b) {
  const size_t own_slot = static_cast<size_t>(c.root) * c.count;
  switch (c.kind) {
    case OpKind::kAllToAll:
      b->recv = b->send;
      break;
    case OpKind::kGather:
      if (me != c.root) return;
      std::copy(b->send.begin(), b->send.begin() + static_cast<std::ptrdiff_t>(c.count * es),
                b->recv.begin() + static_cast<std::ptrdiff_t>(own_slot * es));
      b->in_offset = own_slot;
      break;
    case OpKind::kScatter:
      if (me != c.root) return;
      b->recv = b->send;
      b->recv_offset = own_slot;
      break;
    default:
      return;
  }
  b->in_place = true;
}

// The peer whose part holds receive offset i (parts are contiguous, in rank order).
int alltoallvSource(const AlltoallvSplit& split, size_t i) {
  const auto& offs = split.recv_offsets;
  // The last part starting at or before i (i < the total): never an empty one, which starts
  // where the next part does.
  return static_cast<int>(std::upper_bound(offs.begin(), offs.end(), i) - offs.begin()) - 1;
}

std::optional<std::string> checkGuard(const OpBuffers& b, size_t es) {
  for (size_t k = b.recv_count * es; k < b.recv.size(); ++k) {
    if (b.recv[k] != 0xff) {
      return fmt::format("byte {} past the last received part was written (0x{:02x})",
                         k - b.recv_count * es, b.recv[k]);
    }
  }
  return std::nullopt;
}

int mod(int a, int n) {
  return ((a % n) + n) % n;
}

// Expected value at receive offset i, or nullopt when this rank's buffer is not defined there.
std::optional<double> expectedAt(const OpCall& c, const PatternKey& key, int me, int n,
                                 const OpBuffers& b, size_t i) {
  const PatternShape s = shapeOf(c, n);
  const size_t cnt = c.count;
  switch (c.kind) {
    case OpKind::kAllReduce:
      return reducedValue(key, s, i);
    case OpKind::kReduce:
      if (me != c.root) return std::nullopt;
      return reducedValue(key, s, i);
    case OpKind::kBroadcast:
      return inputValue(key, s, c.root, i);
    case OpKind::kAllGather:
      return inputValue(key, s, static_cast<int>(i / cnt), i % cnt);
    case OpKind::kReduceScatter:
      return reducedValue(key, s, me * cnt + i);
    case OpKind::kAllToAll:
      return inputValue(key, s, static_cast<int>(i / cnt), me * cnt + i % cnt);
    case OpKind::kGather:
      if (me != c.root) return std::nullopt;
      return inputValue(key, s, static_cast<int>(i / cnt), i % cnt);
    case OpKind::kScatter:
      return inputValue(key, s, c.root, me * cnt + i);
    case OpKind::kPipeline:
      if (b.recv_peer < 0) return std::nullopt;
      return inputValue(key, s, b.recv_peer, i);
    case OpKind::kAllToAllV: {
      const int src = alltoallvSource(b.split, i);
      const size_t at = alltoallvSendOffset(cnt, c.equal_counts, key, src, me);
      return inputValue(key, s, src, at + i - b.split.recv_offsets[static_cast<size_t>(src)]);
    }
    case OpKind::kCoalesced:  // never one call: each of its collectives has its own buffers
      break;
  }
  return std::nullopt;
}

}  // namespace

OpCall callFromSpec(const OpSpec& spec, int comm_index) {
  OpCall c;
  c.kind = spec.kind;
  c.comm = comm_index;
  c.count = spec.count;
  c.dtype = spec.dtype;
  c.redop = spec.redop;
  c.scalar = spec.premul_scalar;
  c.root = spec.root;
  c.direction = spec.direction;
  c.grouped = spec.grouped;
  c.in_place = spec.in_place;
  c.equal_counts = spec.equal_counts;
  c.captured = spec.captured;
  return c;
}

OpBuffers prepareBuffers(const OpCall& c, const PatternKey& key, int me, int n) {
  OpBuffers b;
  const size_t cnt = c.count;
  const auto all = cnt * static_cast<size_t>(n);
  switch (c.kind) {
    case OpKind::kAllReduce:
    case OpKind::kBroadcast:
    case OpKind::kReduce:
      b.send_count = cnt;
      b.recv_count = cnt;
      break;
    case OpKind::kAllGather:
    case OpKind::kGather:
      b.send_count = cnt;
      b.recv_count = all;
      break;
    case OpKind::kReduceScatter:
    case OpKind::kScatter:
      b.send_count = all;
      b.recv_count = cnt;
      break;
    case OpKind::kAllToAll:
      b.send_count = all;
      b.recv_count = all;
      break;
    case OpKind::kPipeline: {
      if (c.direction == PipeDirection::kExchange) {
        // Ungrouped, the lower rank of a pair sends first and the upper one receives first.
        const int partner = me ^ 1;
        if (partner < n) {
          b.send_peer = mod(partner + c.peer_shift, n);
          b.recv_peer = partner;
        }
        b.send_first = me % 2 == 0;
      } else {
        const int step = c.direction == PipeDirection::kForward ? 1 : -1;
        if (me + step >= 0 && me + step < n) b.send_peer = mod(me + step + c.peer_shift, n);
        if (me - step >= 0 && me - step < n) b.recv_peer = me - step;
      }
      b.send_first = b.send_first || c.send_first;
      b.send_count = b.send_peer >= 0 ? cnt : 0;
      b.recv_count = b.recv_peer >= 0 ? cnt : 0;
      break;
    }
    case OpKind::kAllToAllV:
      b.split = alltoallvSplit(cnt, c.equal_counts, key, me, n);
      b.send_count = b.split.send_total;
      b.recv_count = b.split.recv_total;
      break;
    case OpKind::kCoalesced:  // never one call: each of its collectives has its own buffers
      break;
  }
  const size_t es = dtypeSize(c.dtype);
  const size_t guard = c.kind == OpKind::kAllToAllV ? kGuardBytes : 0;
  // Never hand the library a null pointer, even for an empty or unused buffer.
  b.send.assign(std::max<size_t>(b.send_count, 1) * es, 0);
  b.recv.assign(std::max<size_t>(b.recv_count, 1) * es + guard, 0xff);
  const PatternShape s = shapeOf(c, n);
  for (size_t k = 0; k < b.send_count; ++k) {
    encodeValue(inputValue(key, s, me, k), c.dtype, &b.send[k * es]);
  }
  if (c.in_place) makeInPlace(c, me, es, &b);
  return b;
}

bool outputDefined(const OpCall& c, int me, const OpBuffers& b) {
  switch (c.kind) {
    case OpKind::kReduce:
    case OpKind::kGather:
      return me == c.root;
    case OpKind::kPipeline:
      return b.recv_peer >= 0;
    default:
      return true;
  }
}

std::optional<std::string> checkResult(const OpCall& c, const PatternKey& key, int me, int n,
                                       const OpBuffers& b, size_t* non_finite) {
  const size_t es = dtypeSize(c.dtype);
  const double tol = tolerance(shapeOf(c, n));
  for (size_t i = 0; i < b.recv_count; ++i) {
    const auto want = expectedAt(c, key, me, n, b, i);
    if (!want) return std::nullopt;  // undefined here means undefined for the whole buffer
    const double got = decodeValue(&b.recv[(b.recv_offset + i) * es], c.dtype);
    if (non_finite != nullptr && !std::isfinite(got)) {
      ++*non_finite;
      continue;
    }
    if (!(std::fabs(got - *want) <= tol)) {
      const std::string from =
          c.kind == OpKind::kAllToAllV
              ? fmt::format(" (part from rank {})", alltoallvSource(b.split, i))
              : "";
      return fmt::format("offset {}{}: got {} expected {}{}", i, from, got, *want,
                         tol > 0 ? fmt::format(" (tolerance {})", tol) : "");
    }
  }
  if (c.kind == OpKind::kAllToAllV) return checkGuard(b, es);
  return std::nullopt;
}

}  // namespace ncclscope::sim
