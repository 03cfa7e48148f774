// Plugin-only recording, the cold part: which side records a communicator, the runtime's
// creation, the communicator's table entry and creation record.
#include "plugin/profiler/plugin_only_recorder.h"

#include <cinttypes>
#include <cstdio>
#include <new>
#include <string>

#include "plugin/core/probe_clock.h"
#include "plugin/core/thread_state.h"
#include "plugin/core/warn.h"
#include "plugin/profiler/plugin_only_state.h"
#include "plugin/profiler/profiler_identity.h"
#include "plugin/profiler/proxy_mask.h"
#include "plugin/runtime/comm_registry.h"
#include "plugin/runtime/probe_record.h"
#include "plugin/runtime/runtime.h"
#include "trace/ring_layout.h"

namespace ncclscope::plugin::plugin_only {
namespace {

using profiler::Context;

Counters g_counters;
std::atomic<uint32_t> g_comms{0};
std::atomic<bool> g_warned_full{false};

std::string DefaultName(uint64_t id) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "comm-%016" PRIx64, id);
  return buf;
}

// The communicator's comm table entry, as the interposer's creation publishes it. Its handle
// field holds the context's address: the profiler never sees the ncclComm_t.
void Publish(Runtime& rt, const Context& c, const char* name) {
  trace::CommInfo info;
  info.id = c.comm_id;
  info.origin = trace::kCommFromUniqueId;  // the profiler cannot tell a split from an init
  info.rank = c.rank;
  info.nranks = c.nranks;
  info.created_monotonic_ns = ProbeNowNs();
  info.handle = reinterpret_cast<uintptr_t>(&c);
  info.name = name != nullptr && *name != '\0' ? std::string(name) : DefaultName(c.comm_id);
  rt.ring->AddComm(info);
  if (rt.ring->GlobalRank() < 0 && c.rank >= 0) rt.ring->SetGlobalRank(c.rank, c.nranks);
}

// The creation as a closed comm_init_rank record (comm_id, aux = rank << 32 | nranks, as the
// interposer writes it), stamped when NCCL called the profiler's init.
void RecordCreation(Runtime& rt, const Context& c) {
  trace::RecordData d = ProbeRecord(trace::OpType::kCommInitRank, c.comm_id);
  d.aux = PackAux(c.rank, c.nranks);
  d.result = ncclSuccess;
  rt.ring->Append(d, false);
}

// The runtime when this recorder takes the communicator (creating it when none exists), else
// null. The runtime says who created it, so concurrent inits of several communicators agree
// without a lock of their own.
Runtime* TakeRuntime(int rank, int nranks) {
  Runtime* rt = g_runtime.load(std::memory_order_acquire);
  if (rt == kRuntimeOff) return nullptr;
  if (rt == nullptr) {
    // The runtime's creation must not record anything of ours, as in BeginCall.
    ThreadState& ts = Tls();
    const uint32_t saved = ts.in_probe;
    ts.in_probe = 1;
    rt = InitRuntimeFromProfiler();
    ts.in_probe = saved;
    if (rt == nullptr) return nullptr;
  }
  if (!rt->created_by_profiler) return nullptr;
  // A creation the interposer recorded (an LD_PRELOADed process that also has a statically
  // linked NCCL, say) is the interposer's communicator.
  if (FindCreatingComm(*rt->ring, CachedTid(Tls()), rank, nranks) != 0) return nullptr;
  return rt;
}

}  // namespace

Counters& GetCounters() noexcept {
  return g_counters;
}

bool Init(int abi, void** context, uint64_t comm_hash, int* mask, const char* comm_name, int nranks,
          int rank) noexcept {
  try {
    Runtime* rt = TakeRuntime(rank, nranks);
    if (rt == nullptr) return false;
    if (nranks <= 0) return true;
    Context* cp = profiler::NewContext();
    if (cp == nullptr || !profiler::EnsureHandlePool()) {
      if (!g_warned_full.exchange(true)) {
        Warn(
            "profiler: more than %u communicators (or no memory for event handles); the others "
            "are not recorded",
            kMaxComms);
      }
      return true;
    }
    Context& c = *cp;
    c.comm_id = comm_hash;
    c.records = true;
    c.abi = abi;
    c.rank = rank;
    c.nranks = nranks;
    c.send_seq = new std::atomic<uint64_t>[static_cast<size_t>(nranks)]();
    c.recv_seq = new std::atomic<uint64_t>[static_cast<size_t>(nranks)]();
    Publish(*rt, c, comm_name);
    RecordCreation(*rt, c);
    c.live.store(true, std::memory_order_release);
    g_comms.fetch_add(1, std::memory_order_relaxed);
    // One int for the whole process: another plugin's bits are kept. Proxy detail as in the
    // interposed mode: NCCLSCOPE_PROFILER_PROXY, or while the watchdog suspects a hang.
    profiler::AttachMask(mask, abi >= 5 ? kMaskV5 : kMaskV4,
                         profiler::ParseProxyDetailMode(rt->config.profiler_proxy.c_str()),
                         *rt->ring);
    if (context != nullptr) *context = &c;
    return true;
  } catch (...) {
    WarnOnce(WarnKey::kInternal, "profiler: cannot record a communicator (out of memory)");
    return true;
  }
}

bool OwnsContext(const void* context) noexcept {
  const Context* c = profiler::ContextOf(context);
  return c != nullptr && c->records;
}

Stats GetStats() noexcept {
  Stats s;
  s.comms = g_comms.load(std::memory_order_relaxed);
  s.records = g_counters.records.load(std::memory_order_relaxed);
  s.completions = g_counters.completions.load(std::memory_order_relaxed);
  s.busy_reused = profiler::BusyReused();
  return s;
}

}  // namespace ncclscope::plugin::plugin_only
