// Loading the profiler plugin and calling its table, as NCCL 2.28.9's src/plugin/profiler.cc
// (ncclProfilerPluginLoad) and src/plugin/plugin_open.cc (openPluginLib, tryOpenLib) do.
#include <dlfcn.h>
#include <strings.h>
#include <unistd.h>

#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <mutex>
#include <string>

#include "sim/emulator/env_config.h"
#include "sim/emulator/profiler_dispatch.h"

namespace ncclsim::prof {
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
bool g_loaded = false;  // written once under g_load_once, before any event
int g_mask = 0;
pid_t g_pid = 0;
int g_channels = 2;
uint64_t g_gpu_offset = 0;

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

// tryOpenLib: any case-insensitive prefix of STATIC_PLUGIN ("s", "Static") names the running
// executable, whose global scope includes preloaded libraries.
void* tryOpen(const std::string& name) {
  if (strncasecmp(name.c_str(), "STATIC_PLUGIN", name.size()) == 0) {
    return dlopen(nullptr, RTLD_NOW | RTLD_LOCAL);
  }
  return dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL);
}

// openPluginLib: the fallback name is tried only for a value without '/' that is not "lib*.so".
bool wantsFallbackName(const std::string& v) {
  if (v.find('/') != std::string::npos) return false;
  const bool lib_prefix = v.compare(0, 3, "lib") == 0;
  const bool so_suffix = v.size() >= 3 && v.compare(v.size() - 3, 3, ".so") == 0;
  return !lib_prefix || !so_suffix;
}

// ncclProfilerPluginLoad: "none" (any case) is off; unset or empty tries libnccl-profiler.so;
// a value is opened as given, then as libnccl-profiler-<value>.so.
void* openPlugin(std::string* tried) {
  const char* env = std::getenv("NCCL_PROFILER_PLUGIN");
  if (env != nullptr && strcasecmp(env, "none") == 0) return nullptr;
  const bool named = env != nullptr && *env != '\0';
  const std::string value = named ? env : "libnccl-profiler.so";
  *tried = value;
  void* h = tryOpen(value);
  if (h == nullptr && named && wantsFallbackName(value)) {
    const std::string alt = "libnccl-profiler-" + value + ".so";
    *tried += " or " + alt;
    h = tryOpen(alt);
  }
  return h;
}

// Newest table first, as 2.28.9: v5, v4, v3, v2, v1. NCCL would run a v3..v1 plugin through its
// adapters; this emulator does not emulate those versions and says so instead of pretending.
// NCCLSIM_PROFILER_ABI=4 skips v5, to test a plugin's older table.
void loadOnce() {
  g_channels = static_cast<int>(envLong("NCCLSIM_NCHANNELS", 2, 1, 32));
  const char* env = std::getenv("NCCL_PROFILER_PLUGIN");
  std::string tried;
  void* h = openPlugin(&tried);
  if (h == nullptr) {
    // Unset and absent is the normal case; a named plugin that fails to load is worth a line.
    if (env != nullptr && *env != '\0' && !tried.empty()) {
      const char* why = dlerror();
      warnOnce("profiler-open",
               "cannot load profiler plugin " + tried + ": " + (why != nullptr ? why : "?"));
    }
    return;
  }
  const long abi = envLong("NCCLSIM_PROFILER_ABI", 5, 4, 5);
  if (abi >= 5) g_plugin.v5 = static_cast<const profabi::Table5*>(dlsym(h, "ncclProfiler_v5"));
  if (g_plugin.v5 != nullptr) {
    g_plugin.version = 5;
  } else {
    g_plugin.v4 = static_cast<const profabi::Table4*>(dlsym(h, "ncclProfiler_v4"));
    if (g_plugin.v4 != nullptr) g_plugin.version = 4;
  }
  if (g_plugin.version == 0) {
    for (const char* old : {"ncclProfiler_v3", "ncclProfiler_v2", "ncclProfiler_v1"}) {
      if (dlsym(h, old) != nullptr) {
        warnOnce("profiler-table", "profiler plugin " + tried + " has only " + old +
                                       ", which this emulator does not emulate (NCCL 2.28.9 "
                                       "would use it); running without profiler events");
        return;
      }
    }
    warnOnce("profiler-table", "profiler plugin " + tried + " has no ncclProfiler_v5..v1 table");
    return;
  }
  g_pid = getpid();
  g_gpu_offset = 1700000000000000000ull + uint64_t(g_pid) * 1000003ull;
  g_loaded = true;
}

// profiler_v4.cc's startEvent adapter: types the v4 ABI lacks are dropped (the handle is left
// as it was), and Coll / P2p take the Group event as their parent.
void startV4(void* ctx, void** handle, const Descr5* e) {
  Descr4 d{};
  d.type = static_cast<uint8_t>(e->type);
  d.parentObj = e->parentObj;
  d.rank = e->rank;
  switch (e->type) {
    case profabi::kEvGroup:
    case profabi::kEvProxyCtrl:
      break;
    case profabi::kEvColl:
      d.coll = {e->coll.seqNumber, e->coll.func, e->coll.sendBuff, e->coll.recvBuff,
                e->coll.count,     e->coll.root, e->coll.datatype, e->coll.nChannels,
                e->coll.nWarps,    e->coll.algo, e->coll.proto};
      d.parentObj = e->coll.parentGroup;
      break;
    case profabi::kEvP2p:
      // NCCL's adapter does not copy nChannels (its v4 descriptor keeps whatever was on the
      // stack); zero here.
      d.p2p = {e->p2p.func, e->p2p.buff, e->p2p.datatype, e->p2p.count, e->p2p.peer, 0};
      d.parentObj = e->p2p.parentGroup;
      break;
    case profabi::kEvProxyOp:
      d.proxyOp = e->proxyOp;
      break;
    case profabi::kEvProxyStep:
      d.proxyStep = e->proxyStep;
      break;
    case profabi::kEvKernelCh:
      d.kernelCh = e->kernelCh;
      break;
    case profabi::kEvNetPlugin:
      d.netPlugin = e->netPlugin;
      break;
    default:
      return;
  }
  g_plugin.v4->startEvent(ctx, handle, &d);
}

}  // namespace

int mask() {
  return __atomic_load_n(&g_mask, __ATOMIC_RELAXED);
}

int* maskAddress() {
  return &g_mask;
}

bool load() {
  std::call_once(g_load_once, loadOnce);
  return g_loaded;
}

bool loaded() {
  return __atomic_load_n(&g_loaded, __ATOMIC_RELAXED);
}

ncclResult_t init(void** ctx, uint64_t comm_hash, const char* name, int nnodes, int nranks,
                  int rank) {
  if (g_plugin.version == 5) {
    return g_plugin.v5->init(ctx, comm_hash, &g_mask, name, nnodes, nranks, rank, logToStderr);
  }
  return g_plugin.v4->init(ctx, &g_mask, name, comm_hash, nnodes, nranks, rank, logToStderr);
}

void finalize(void* ctx) {
  if (g_plugin.version == 5) {
    g_plugin.v5->finalize(ctx);
  } else {
    g_plugin.v4->finalize(ctx);
  }
}

void start(void* ctx, void** handle, Descr5* d) {
  if (g_plugin.version == 5) {
    g_plugin.v5->startEvent(ctx, handle, d);
  } else {
    startV4(ctx, handle, d);
  }
}

void stop(void* handle) {
  if (handle == nullptr) return;
  if (g_plugin.version == 5) {
    g_plugin.v5->stopEvent(handle);
  } else {
    g_plugin.v4->stopEvent(handle);
  }
}

void record(void* handle, int state, profabi::StateArgs* args) {
  if (handle == nullptr) return;
  if (g_plugin.version == 5) {
    g_plugin.v5->recordEventState(handle, state, args);
    return;
  }
  // profiler_v4.cc's recordEventState adapter drops the v5 GroupApi states.
  if (state == profabi::kStateGroupStartApiStop || state == profabi::kStateGroupEndApiStart) return;
  g_plugin.v4->recordEventState(handle, state, args);
}

pid_t pid() {
  return g_pid;
}

int channels() {
  return g_channels;
}

uint64_t gpuTimerNs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return uint64_t(ts.tv_sec) * 1000000000ull + uint64_t(ts.tv_nsec) + g_gpu_offset;
}

}  // namespace ncclsim::prof
