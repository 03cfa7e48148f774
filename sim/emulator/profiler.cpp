#include "sim/emulator/profiler.h"

#include <dlfcn.h>
#include <strings.h>

#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>

#include "sim/emulator/backoff_wait.h"
#include "sim/emulator/env_config.h"
#include "sim/emulator/op_desc.h"
#include "sim/emulator/profiler_abi.h"

namespace ncclsim {
namespace {

using profabi::Descr4;
using profabi::Descr5;

struct Plugin {
  int version = 0;  // 0: none
  const profabi::Table5* v5 = nullptr;
  const profabi::Table4* v4 = nullptr;
};

Plugin g_plugin;
std::once_flag g_load_once;
int g_mask = 0;  // NCCL's process-wide activation mask, written by the plugin's init

void logToStderr(int level, unsigned long /*flags*/, const char* file, int line, const char* fmt,
                 ...) {
  const char* debug = std::getenv("NCCL_DEBUG");
  if (debug == nullptr || (strcasecmp(debug, "INFO") != 0 && strcasecmp(debug, "TRACE") != 0)) {
    return;
  }
  char text[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(text, sizeof text, fmt, ap);
  va_end(ap);
  std::fprintf(stderr, "ncclsim: profiler plugin [%d] %s:%d %s\n", level, file, line, text);
}

bool isLibName(const std::string& v) {
  return v.rfind("lib", 0) == 0 && v.size() > 3 && v.compare(v.size() - 3, 3, ".so") == 0;
}

// NCCL's rules: unset -> libnccl-profiler.so; "none" -> off; STATIC_PLUGIN -> the process's own
// symbols; else the value, then libnccl-profiler-<value>.so for a bare name. RTLD_NOW|RTLD_LOCAL.
void* openPlugin(std::string* tried) {
  const char* env = std::getenv("NCCL_PROFILER_PLUGIN");
  if (env != nullptr && strcasecmp(env, "none") == 0) return nullptr;
  if (env != nullptr && std::strcmp(env, "STATIC_PLUGIN") == 0) {
    *tried = "STATIC_PLUGIN";
    return dlopen(nullptr, RTLD_NOW | RTLD_LOCAL);
  }
  const std::string value = env != nullptr && *env != '\0' ? env : "libnccl-profiler.so";
  *tried = value;
  void* h = dlopen(value.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (h == nullptr && env != nullptr && value.find('/') == std::string::npos && !isLibName(value)) {
    const std::string alt = "libnccl-profiler-" + value + ".so";
    *tried += " or " + alt;
    h = dlopen(alt.c_str(), RTLD_NOW | RTLD_LOCAL);
  }
  return h;
}

// Newest table first, as 2.28.9: v5, v4 (v3..v1 are found but not emulated).
// NCCLSIM_PROFILER_ABI=4 looks for v4 only, to test a plugin's older table.
void load() {
  const bool named = std::getenv("NCCL_PROFILER_PLUGIN") != nullptr;
  std::string tried;
  void* h = openPlugin(&tried);
  if (h == nullptr) {
    // Unset and absent is the normal case; a named plugin that fails to load is worth a line.
    if (named && !tried.empty()) {
      warnOnce("profiler-open", "cannot load profiler plugin " + tried + ": " + dlerror());
    }
    return;
  }
  const long abi = envLong("NCCLSIM_PROFILER_ABI", 5, 4, 5);
  if (abi >= 5) {
    g_plugin.v5 = static_cast<const profabi::Table5*>(dlsym(h, "ncclProfiler_v5"));
  }
  if (g_plugin.v5 != nullptr) {
    g_plugin.version = 5;
    return;
  }
  g_plugin.v4 = static_cast<const profabi::Table4*>(dlsym(h, "ncclProfiler_v4"));
  if (g_plugin.v4 != nullptr) {
    g_plugin.version = 4;
    return;
  }
  warnOnce("profiler-table", "profiler plugin " + tried + " has no ncclProfiler_v5/v4 table");
}

bool wants(uint64_t bits) {
  return (static_cast<uint64_t>(__atomic_load_n(&g_mask, __ATOMIC_RELAXED)) & bits) != 0;
}

// Requesting a child event makes NCCL emit its ancestors too.
constexpr uint64_t kCollOrBelow = profabi::kEvColl | profabi::kEvProxyOp | profabi::kEvProxyStep |
                                  profabi::kEvKernelCh | profabi::kEvNetPlugin;

// The plugin context of d's communicator; null when none (no plugin, opted out, finalized).
void* contextOf(const OpDesc* d) {
  const ProfilerComm* pc = d->comm != nullptr ? d->comm->profiler : nullptr;
  return pc != nullptr ? pc->ctx.load(std::memory_order_acquire) : nullptr;
}

bool isCollective(OpKind k) {
  return k != OpKind::kSend && k != OpKind::kRecv;
}

const char* funcName(OpKind k) {
  switch (k) {
    case OpKind::kAllReduce:
      return "AllReduce";
    case OpKind::kBroadcast:
      return "Broadcast";
    case OpKind::kReduce:
      return "Reduce";
    case OpKind::kAllGather:
      return "AllGather";
    case OpKind::kReduceScatter:
      return "ReduceScatter";
    case OpKind::kAlltoAll:
      return "AlltoAll";
    case OpKind::kGather:
      return "Gather";
    case OpKind::kScatter:
      return "Scatter";
    case OpKind::kSend:
      return "Send";
    case OpKind::kRecv:
      return "Recv";
  }
  return "Unknown";
}

const char* typeName(ncclDataType_t t) {
  static const char* const kNames[] = {"ncclInt8",     "ncclUint8",      "ncclInt32",
                                       "ncclUint32",   "ncclInt64",      "ncclUint64",
                                       "ncclFloat16",  "ncclFloat32",    "ncclFloat64",
                                       "ncclBfloat16", "ncclFloat8e4m3", "ncclFloat8e5m2"};
  const int i = static_cast<int>(t);
  return i >= 0 && i < static_cast<int>(sizeof kNames / sizeof kNames[0]) ? kNames[i] : "Unknown";
}

}  // namespace

ProfilerComm* profilerCommInit(uint64_t comm_hash, const char* name, int nranks, int rank) {
  std::call_once(g_load_once, load);
  if (g_plugin.version == 0) return nullptr;
  auto* pc = new ProfilerComm;
  void* ctx = nullptr;
  ncclResult_t r;
  if (g_plugin.version == 5) {
    r = g_plugin.v5->init(&ctx, comm_hash, &g_mask, name, 1, nranks, rank, logToStderr);
  } else {
    r = g_plugin.v4->init(&ctx, &g_mask, name, comm_hash, 1, nranks, rank, logToStderr);
  }
  // As 2.28.9: a failed init is logged and the run goes on without profiling this communicator.
  if (r != ncclSuccess) {
    warnOnce("profiler-init", "profiler init failed with error " + std::to_string(int(r)) +
                                  "; continuing without profiler");
    ctx = nullptr;
  }
  pc->ctx.store(ctx);
  return pc;
}

void profilerCommFinalize(ProfilerComm* pc) {
  void* ctx = pc != nullptr ? pc->ctx.exchange(nullptr) : nullptr;
  if (ctx == nullptr) return;
  if (g_plugin.version == 5) {
    g_plugin.v5->finalize(ctx);
  } else {
    g_plugin.v4->finalize(ctx);
  }
}

void profilerCollApiStart(OpDesc* d) {
  void* ctx = contextOf(d);
  if (ctx == nullptr || g_plugin.version < 5 || !isCollective(d->kind) ||
      !wants(profabi::kEvCollApi | kCollOrBelow)) {
    return;
  }
  Descr5 e{};
  e.type = profabi::kEvCollApi;
  e.collApi.func = funcName(d->kind);
  e.collApi.count = d->count;
  e.collApi.datatype = typeName(d->dtype);
  e.collApi.root = d->root;
  e.collApi.stream = d->stream;
  g_plugin.v5->startEvent(ctx, &d->prof.api, &e);
}

void profilerCollApiStop(OpDesc* d) {
  if (d->prof.api != nullptr) g_plugin.v5->stopEvent(d->prof.api);
}

void profilerCollEnqueued(OpDesc* d) {
  void* ctx = contextOf(d);
  if (ctx == nullptr || !isCollective(d->kind) || !wants(kCollOrBelow)) return;
  const uint64_t seq = d->comm->profiler->coll_seq[static_cast<int>(d->kind)].fetch_add(1);
  // NCCL reports AllGather and Broadcast in bytes of ncclInt8.
  const bool bytes = d->kind == OpKind::kAllGather || d->kind == OpKind::kBroadcast;
  const size_t count = bytes ? d->count * dtypeSize(d->dtype) : d->count;
  const char* dtype = typeName(bytes ? ncclInt8 : d->dtype);
  if (g_plugin.version == 5) {
    Descr5 e{};
    e.type = profabi::kEvColl;
    e.parentObj = d->prof.api;
    e.rank = d->comm->rank;
    e.coll = {seq,    funcName(d->kind), d->send, d->recv, count, d->root, dtype, 1, 1,
              "RING", "SIMPLE",          nullptr};
    g_plugin.v5->startEvent(ctx, &d->prof.coll, &e);
    if (d->prof.coll != nullptr) g_plugin.v5->stopEvent(d->prof.coll);
  } else {
    Descr4 e{};
    e.type = static_cast<uint8_t>(profabi::kEvColl);
    e.rank = d->comm->rank;
    e.coll = {seq,    funcName(d->kind), d->send, d->recv, count, d->root, dtype, 1, 1,
              "RING", "SIMPLE"};
    g_plugin.v4->startEvent(ctx, &d->prof.coll, &e);
    if (d->prof.coll != nullptr) g_plugin.v4->stopEvent(d->prof.coll);
  }
}

void profilerKernelStart(OpDesc* d) {
  void* ctx = contextOf(d);
  if (ctx == nullptr || !isCollective(d->kind) || !wants(profabi::kEvKernelCh)) return;
  const profabi::KernelCh ch{0, nowNs()};
  if (g_plugin.version == 5) {
    Descr5 e{};
    e.type = profabi::kEvKernelCh;
    e.parentObj = d->prof.coll;
    e.kernelCh = ch;
    g_plugin.v5->startEvent(ctx, &d->prof.kernel, &e);
  } else {
    Descr4 e{};
    e.type = static_cast<uint8_t>(profabi::kEvKernelCh);
    e.parentObj = d->prof.coll;
    e.kernelCh = ch;
    g_plugin.v4->startEvent(ctx, &d->prof.kernel, &e);
  }
}

void profilerKernelStop(OpDesc* d) {
  void* h = d->prof.kernel;
  if (h == nullptr) return;
  d->prof.kernel = nullptr;
  profabi::StateArgs args{};
  args.kernelCh.pTimer = nowNs();
  if (g_plugin.version == 5) {
    g_plugin.v5->recordEventState(h, profabi::kStateKernelChStop, &args);
    g_plugin.v5->stopEvent(h);
  } else {
    g_plugin.v4->recordEventState(h, profabi::kStateKernelChStop, &args);
    g_plugin.v4->stopEvent(h);
  }
}

}  // namespace ncclsim
