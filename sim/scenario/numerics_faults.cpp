#include "sim/scenario/numerics_faults.h"

#include <cmath>
#include <utility>

#include "sim/scenario/comm_layout.h"
#include "sim/scenario/dtype_codec.h"
#include "sim/scenario/names.h"

namespace ncclscope::sim {
namespace {

bool atOrBefore(const FaultSpec& f, int step, int op) {
  return f.op && std::make_pair(f.step, *f.op) <= std::make_pair(step, op);
}

}  // namespace

bool nanInputReaches(const Scenario& s, int step, int op) {
  for (const FaultSpec& f : s.faults) {
    if (f.kind != FaultKind::kNanInput || !f.op) continue;
    if ((f.step == step && *f.op == op) || (f.spread && atOrBefore(f, step, op))) return true;
  }
  return false;
}

bool nanSpreadsAt(const Scenario& s, int step, int op) {
  for (const FaultSpec& f : s.faults) {
    if (f.kind == FaultKind::kNanInput && f.spread && atOrBefore(f, step, op)) return true;
  }
  return false;
}

bool writeInput(const OpCall& c, OpBuffers& b, size_t index, double value) {
  if (!dtypeIsFloat(c.dtype) || index >= b.send_count) return false;
  const size_t es = dtypeSize(c.dtype);
  unsigned char* in = b.in_place ? b.recv.data() + b.in_offset * es : b.send.data();
  encodeValue(value, c.dtype, in + index * es);
  return true;
}

bool outputHasNonFinite(const OpCall& c, int me, const OpBuffers& b) {
  if (!dtypeIsFloat(c.dtype) || !outputDefined(c, me, b)) return false;
  const size_t es = dtypeSize(c.dtype);
  for (size_t i = 0; i < b.recv_count; ++i) {
    if (!std::isfinite(decodeValue(&b.recv[(b.recv_offset + i) * es], c.dtype))) return true;
  }
  return false;
}

uint64_t outputBits(const OpCall& c, int me, const OpBuffers& b) {
  if (!outputDefined(c, me, b)) return 0;
  return uint64_t{b.recv_count} * dtypeSize(c.dtype) * 8;
}

void flipOutputBit(const OpCall& c, OpBuffers& b, uint64_t bit) {
  const size_t byte = b.recv_offset * dtypeSize(c.dtype) + bit / 8;
  b.recv[byte] = static_cast<unsigned char>(b.recv[byte] ^ (1u << (bit % 8)));
}

OutputFlips::OutputFlips(const Scenario& s, int world_rank, int nranks) {
  for (const FaultSpec& f : s.faults) {
    if (f.kind != FaultKind::kFlipOutput) continue;
    for (int w : f.ranks) {
      if (resolveRank(w, nranks) == world_rank) {
        faults_.push_back({&f, std::nullopt});
        break;
      }
    }
  }
}

std::optional<uint64_t> OutputFlips::next(int step, int op) {
  std::optional<uint64_t> bit;
  for (Armed& a : faults_) {
    const FaultSpec& f = *a.fault;
    bool hit = false;
    if (!a.start) {
      hit = f.step == step && f.op == op;
      if (hit) a.start = ordinal_;
    } else {
      hit = f.every > 0 && (ordinal_ - *a.start) % static_cast<uint64_t>(f.every) == 0;
    }
    if (hit && !bit) bit = f.bit;
  }
  ++ordinal_;
  return bit;
}

}  // namespace ncclscope::sim
