#include "plugin/nvtx/nvtx_nccl_payload_calls.h"

#include <atomic>

namespace ncclscope::plugin {
namespace {

// A thread's NCCL ranges as a ring indexed by depth: only the innermost frame is ever read, and a
// range whose pop never reaches the injection (NCCL pops its creation calls' ranges through
// nvtxRangePopPayload, which a tool other than ncclscope may serve) shifts the ring instead of
// filling a stack. NCCL's API ranges seldom nest (ncclBcast pushes none and calls ncclBroadcast,
// which pushes one), so four is ample.
constexpr uint32_t kRing = 4;  // a power of two

// Trivially constructible, like ThreadState: a `__thread` needs no constructor or exit hook.
struct Frame {
  uint64_t comm_hash;
  uint64_t bytes;
  int32_t root;
  int32_t peer;
  int32_t redop;
  uint16_t op;
  uint8_t valid;
};
struct NcclCalls {
  uint32_t depth;
  Frame frames[kRing];
};
__thread NcclCalls t_nccl_calls;

// The empty asm keeps the computed address in a register (one __tls_get_addr per callback), as
// ThreadRanges() does.
NcclCalls& Calls() noexcept {
  NcclCalls* t = &t_nccl_calls;
  __asm__("" : "+r"(t));
  return *t;
}

std::atomic<uint64_t> g_decoded{0};
std::atomic<uint64_t> g_refused{0};
std::atomic<uint64_t> g_schemas_seen{0};
std::atomic<uint64_t> g_schemas_differ{0};

}  // namespace

int NcclRangePush(const nvtxEventAttributes_t* a) noexcept {
  NcclCalls& t = Calls();
  const uint32_t level = t.depth++;
  Frame& f = t.frames[level & (kRing - 1)];
  NcclCallArgs args;
  const NcclDecode d = DecodeNcclPayload(a, NcclSchemas(), &args);
  f.valid = d == NcclDecode::kDecoded ? 1 : 0;
  if (d == NcclDecode::kDecoded) {
    f.comm_hash = args.comm_hash;
    f.bytes = args.bytes;
    f.root = args.root;
    f.peer = args.peer;
    f.redop = args.redop;
    f.op = static_cast<uint16_t>(args.op);
    // A plain load and store, not a locked add: this runs on every NCCL call, and a diagnostic
    // count may lose an increment when two threads decode at once.
    g_decoded.store(g_decoded.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
  } else if (d == NcclDecode::kRefused) {
    g_refused.fetch_add(1, std::memory_order_relaxed);  // rare
  }
  return static_cast<int>(level);
}

int NcclRangePop() noexcept {
  NcclCalls& t = Calls();
  if (t.depth == 0) return -1;
  return static_cast<int>(--t.depth);
}

bool CurrentNcclCallArgs(NcclCallArgs* out) noexcept {
  const NcclCalls& t = Calls();
  if (t.depth == 0) return false;
  const Frame& f = t.frames[(t.depth - 1) & (kRing - 1)];
  if (f.valid == 0) return false;
  out->op = static_cast<trace::OpType>(f.op);
  out->comm_hash = f.comm_hash;
  out->bytes = f.bytes;
  out->root = f.root;
  out->peer = f.peer;
  out->redop = f.redop;
  return true;
}

NcclPayloadCounts GetNcclPayloadCounts() noexcept {
  NcclPayloadCounts c;
  c.decoded = g_decoded.load(std::memory_order_relaxed);
  c.refused = g_refused.load(std::memory_order_relaxed);
  c.schemas_seen = g_schemas_seen.load(std::memory_order_relaxed);
  c.schemas_differ = g_schemas_differ.load(std::memory_order_relaxed);
  return c;
}

void NoteNcclSchemaRegistered(bool matches) noexcept {
  g_schemas_seen.fetch_add(1, std::memory_order_relaxed);
  if (!matches) g_schemas_differ.fetch_add(1, std::memory_order_relaxed);
}

}  // namespace ncclscope::plugin
