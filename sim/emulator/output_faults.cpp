#include "sim/emulator/output_faults.h"

#include <atomic>
#include <string>

#include "sim/emulator/env_config.h"
#include "sim/emulator/ncclsim_control.h"

namespace ncclsim {
namespace {

std::atomic<int64_t> g_armed{-1};

// Bytes of the receive buffer a collective defines on this rank (0: it writes none there).
size_t outputBytes(const OpDesc& d) {
  const size_t es = dtypeSize(d.dtype);
  const auto n = static_cast<size_t>(d.comm->nranks);
  const bool root = d.comm->rank == d.root;
  switch (d.kind) {
    case OpKind::kAllReduce:
    case OpKind::kBroadcast:
    case OpKind::kReduceScatter:
    case OpKind::kScatter:
      return d.count * es;
    case OpKind::kReduce:
      return root ? d.count * es : 0;
    case OpKind::kAllGather:
    case OpKind::kAlltoAll:
      return d.count * n * es;
    case OpKind::kGather:
      return root ? d.count * n * es : 0;
    case OpKind::kSend:
    case OpKind::kRecv:
      return 0;
  }
  return 0;
}

}  // namespace

int64_t takeArmedOutputFlip() {
  return g_armed.exchange(-1, std::memory_order_acq_rel);
}

void applyOutputFlip(const OpDesc& d) {
  if (d.flip_bit < 0) return;
  const auto bit = static_cast<uint64_t>(d.flip_bit);
  const size_t bytes = outputBytes(d);
  if (bit / 8 >= bytes) {
    warnOnce("ncclsimFlipNextOutputBit", "ncclsimFlipNextOutputBit: bit " + std::to_string(bit) +
                                             " is outside this rank's " + std::to_string(bytes) +
                                             "-byte output; nothing flipped");
    return;
  }
  static_cast<unsigned char*>(d.recv)[bit / 8] ^= static_cast<unsigned char>(1u << (bit % 8));
}

}  // namespace ncclsim

extern "C" void ncclsimFlipNextOutputBit(uint64_t bit) {
  // Bits past INT64_MAX lie past any output: armed as INT64_MAX, they still draw the warning.
  const uint64_t kMax = INT64_MAX;
  ncclsim::g_armed.store(static_cast<int64_t>(bit < kMax ? bit : kMax), std::memory_order_release);
}
