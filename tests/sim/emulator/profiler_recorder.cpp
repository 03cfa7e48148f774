#include "tests/sim/emulator/profiler_recorder.h"

#include <mutex>

#include <nccl.h>

#include "sim/emulator/profiler_abi.h"

namespace pabi = ncclsim::profabi;

namespace simrec {
namespace {

std::mutex g_mu;
std::vector<Event> g_events;
int g_ranks[64];
int* g_mask_ptr = nullptr;
Knobs g_knobs;

// A handle is a heap cell holding the event's number (never freed: a test process is short).
struct Handle {
  int id;
  uint64_t type;
  int ctx;
};
int g_next_id = 0;

int idOf(void* h) {
  return h == nullptr ? -1 : static_cast<Handle*>(h)->id;
}

ncclResult_t initCommon(const char* table, void** ctx, int* mask, uint64_t hash, int rank) {
  *ctx = rank == g_knobs.null_ctx_rank ? nullptr : &g_ranks[rank];
  *mask = g_knobs.mask;
  {
    std::lock_guard<std::mutex> lock(g_mu);
    g_mask_ptr = mask;
  }
  Event e;
  e.kind = Event::kInit;
  e.table = table;
  e.ctx = rank;
  e.comm_hash = hash;
  add(e);
  return ncclSuccess;
}

template <typename Descr>
void fill(Event* e, const Descr* d, uint64_t type);

template <>
void fill(Event* e, const pabi::Descr5* d, uint64_t type) {
  switch (type) {
    case pabi::kEvGroupApi:
      e->group_depth = d->groupApi.groupDepth;
      break;
    case pabi::kEvCollApi:
      e->func = d->collApi.func;
      e->count = d->collApi.count;
      e->dtype = d->collApi.datatype;
      e->root_or_peer = d->collApi.root;
      break;
    case pabi::kEvP2pApi:
      e->func = d->p2pApi.func;
      e->count = d->p2pApi.count;
      e->dtype = d->p2pApi.datatype;
      break;
    case pabi::kEvColl:
      e->func = d->coll.func;
      e->seq = d->coll.seqNumber;
      e->count = d->coll.count;
      e->dtype = d->coll.datatype;
      e->root_or_peer = d->coll.root;
      e->channels = d->coll.nChannels;
      e->parent_group = idOf(d->coll.parentGroup);
      break;
    case pabi::kEvP2p:
      e->func = d->p2p.func;
      e->count = d->p2p.count;
      e->dtype = d->p2p.datatype;
      e->root_or_peer = d->p2p.peer;
      e->channels = d->p2p.nChannels;
      e->parent_group = idOf(d->p2p.parentGroup);
      break;
    default:
      break;
  }
}

template <>
void fill(Event* e, const pabi::Descr4* d, uint64_t type) {
  if (type == pabi::kEvColl) {
    e->func = d->coll.func;
    e->seq = d->coll.seqNumber;
    e->channels = d->coll.nChannels;
  } else if (type == pabi::kEvP2p) {
    e->func = d->p2p.func;
    e->root_or_peer = d->p2p.peer;
  }
}

template <typename Descr>
ncclResult_t startCommon(const char* table, void* ctx, void** handle, const Descr* d) {
  const uint64_t type = d->type;
  Event e;
  e.kind = Event::kStart;
  e.table = table;
  e.ctx = rankOfContext(ctx);
  e.type = type;
  e.parent = idOf(d->parentObj);
  fill(&e, d, type);
  if (type == pabi::kEvProxyOp) {
    e.channel = d->proxyOp.channelId;
    e.root_or_peer = d->proxyOp.peer;
    e.nsteps = d->proxyOp.nSteps;
    e.chunk = d->proxyOp.chunkSize;
    e.is_send = d->proxyOp.isSend;
    e.pid = d->proxyOp.pid;
  } else if (type == pabi::kEvProxyStep) {
    e.step = d->proxyStep.step;
  } else if (type == pabi::kEvKernelCh) {
    e.channel = d->kernelCh.channelId;
    e.ptimer = d->kernelCh.pTimer;
  }
  {
    std::lock_guard<std::mutex> lock(g_mu);
    e.id = g_next_id++;
  }
  *handle = new Handle{e.id, type, e.ctx};
  add(e);
  return ncclSuccess;
}

ncclResult_t init5(void** ctx, uint64_t id, int* mask, const char*, int, int, int rank,
                   pabi::Logger) {
  return initCommon("exe-v5", ctx, mask, id, rank);
}
ncclResult_t init4(void** ctx, int* mask, const char*, uint64_t hash, int, int, int rank,
                   pabi::Logger) {
  return initCommon("exe-v4", ctx, mask, hash, rank);
}
ncclResult_t start5(void* ctx, void** h, pabi::Descr5* d) {
  return startCommon("exe-v5", ctx, h, d);
}
ncclResult_t start4(void* ctx, void** h, pabi::Descr4* d) {
  return startCommon("exe-v4", ctx, h, d);
}
ncclResult_t stop(void* h) {
  const auto* hd = static_cast<Handle*>(h);
  Event e;
  e.kind = Event::kStop;
  e.id = hd->id;
  e.type = hd->type;
  e.ctx = hd->ctx;
  add(e);
  return ncclSuccess;
}
ncclResult_t record(void* h, int state, pabi::StateArgs* args) {
  const auto* hd = static_cast<Handle*>(h);
  Event e;
  e.kind = Event::kState;
  e.id = hd->id;
  e.type = hd->type;
  e.ctx = hd->ctx;
  e.state = state;
  if (args != nullptr && hd->type == pabi::kEvKernelCh) e.ptimer = args->kernelCh.pTimer;
  if (args != nullptr && hd->type == pabi::kEvProxyStep) e.trans = args->proxyStep.transSize;
  add(e);
  return ncclSuccess;
}
ncclResult_t finalize(void* ctx) {
  Event e;
  e.kind = Event::kFinalize;
  e.ctx = rankOfContext(ctx);
  add(e);
  return ncclSuccess;
}

}  // namespace

int rankOfContext(void* ctx) {
  auto* p = static_cast<int*>(ctx);
  return p >= g_ranks && p < g_ranks + 64 ? int(p - g_ranks) : -1;
}

Knobs& knobs() {
  return g_knobs;
}

int* liveMask() {
  std::lock_guard<std::mutex> lock(g_mu);
  return g_mask_ptr;
}

void add(Event e) {
  e.tid = std::this_thread::get_id();
  std::lock_guard<std::mutex> lock(g_mu);
  g_events.push_back(std::move(e));
}

std::vector<Event> events() {
  std::lock_guard<std::mutex> lock(g_mu);
  return g_events;
}

void clear() {
  std::lock_guard<std::mutex> lock(g_mu);
  g_events.clear();
}

const char* typeName(uint64_t type) {
  switch (type) {
    case pabi::kEvGroup:
      return "Group";
    case pabi::kEvColl:
      return "Coll";
    case pabi::kEvP2p:
      return "P2p";
    case pabi::kEvProxyOp:
      return "ProxyOp";
    case pabi::kEvProxyStep:
      return "ProxyStep";
    case pabi::kEvKernelCh:
      return "KernelCh";
    case pabi::kEvGroupApi:
      return "GroupApi";
    case pabi::kEvCollApi:
      return "CollApi";
    case pabi::kEvP2pApi:
      return "P2pApi";
    case pabi::kEvKernelLaunch:
      return "KernelLaunch";
    default:
      return "?";
  }
}

std::string describe(const Event& e) {
  std::string s = typeName(e.type);
  switch (e.kind) {
    case Event::kStop:
      return s + " stop";
    case Event::kState:
      return s + " state " + std::to_string(e.state);
    case Event::kStart:
      break;
    default:
      return e.kind == Event::kInit ? "init" : "finalize";
  }
  s += " start";
  if (e.type == pabi::kEvGroupApi) s += " depth=" + std::to_string(e.group_depth);
  if (!e.func.empty()) s += " " + e.func;
  if (e.type == pabi::kEvColl) s += " seq=" + std::to_string(e.seq);
  if (e.type == pabi::kEvP2p) s += " peer=" + std::to_string(e.root_or_peer);
  return s;
}

std::vector<std::string> sequence(const std::vector<Event>& ev, int ctx, std::thread::id tid) {
  std::vector<std::string> out;
  for (const Event& e : ev) {
    if (e.ctx == ctx && e.tid == tid &&
        (e.kind == Event::kStart || e.kind == Event::kStop || e.kind == Event::kState)) {
      out.push_back(describe(e));
    }
  }
  return out;
}

}  // namespace simrec

extern "C" __attribute__((visibility("default"))) const pabi::Table5 ncclProfiler_v5 = {
    "exe-v5", simrec::init5, simrec::start5, simrec::stop, simrec::record, simrec::finalize};
extern "C" __attribute__((visibility("default"))) const pabi::Table4 ncclProfiler_v4 = {
    "exe-v4", simrec::init4, simrec::start4, simrec::stop, simrec::record, simrec::finalize};
