// Emulated driver entry points for modules and kernel launches. The emulator cannot run a fatbin,
// so a kernel NAME runs as its host twin: the function `NAME_host` found in the process
// (dlsym(RTLD_DEFAULT)), called on the stream's worker as
//   void NAME_host(void** kernel_params, unsigned grid_x, unsigned block_x);
// A twin's kernel takes one by-value parameter of `NAME_host_param_bytes` bytes (a const unsigned
// long next to the twin), copied at launch as the driver copies kernel parameters; without that
// symbol the kernel takes none and the twin gets NULL. docs/emulator.md, "Kernels".
// Stream capture records a capturing stream's kernel launches (their parameters copied then, as
// a real driver copies them into the graph's nodes) into a graph, which cuGraphLaunch replays on
// any stream; nothing else can be captured (docs/emulator.md, "CUDA graphs").
#include <dlfcn.h>

#include <map>

#include <cstring>
#include <mutex>
#include <new>
#include <set>
#include <string>
#include <vector>

#include "sim/emulator/cuda_exports.h"
#include "sim/emulator/kernel_activity.h"
#include "sim/emulator/stream_capture.h"
#include "sim/emulator/stream_queue.h"

namespace {

using HostTwin = void (*)(void** kernel_params, unsigned grid_x, unsigned block_x);

struct Function {
  std::string name;
  HostTwin twin;
  size_t param_bytes;
};

// A loaded image keeps only the functions looked up in it, freed when it is unloaded.
struct Module {
  std::vector<Function*> functions;
};

// Live handles, so a stale or foreign one is refused instead of dereferenced.
struct Handles {
  std::mutex mu;
  std::set<Module*> modules;
  std::set<Function*> functions;
};

Handles& handles() {
  static auto* h = new Handles;  // leaked: launches may run during static destruction
  return *h;
}

// One queued launch (or a graph's node); owns its copy of the parameter.
struct Launch {
  std::string name;
  HostTwin twin;
  void* param;  // nullptr for a kernel without parameters
  size_t param_bytes;
  unsigned grid_x;
  unsigned block_x;
  uint32_t correlation;
  int device;
  CUstream stream;
};

constexpr std::align_val_t kParamAlign{64};

void runLaunch(void* p) {
  auto* l = static_cast<Launch*>(p);
  void* params[1] = {l->param};
  const uint64_t start = ncclsimGpuClockNs();
  l->twin(l->param != nullptr ? params : nullptr, l->grid_x, l->block_x);
  ncclsimKernelRan(l->name.c_str(), l->correlation, l->device, l->stream, start,
                   ncclsimGpuClockNs());
  if (l->param != nullptr) ::operator delete(l->param, kParamAlign);
  delete l;
}

// A copy of `from` with its own copy of the parameter.
Launch* CloneLaunch(const Launch& from) {
  auto* l = new Launch(from);
  if (from.param != nullptr) {
    l->param = ::operator new(from.param_bytes, kParamAlign);
    std::memcpy(l->param, from.param, from.param_bytes);
  }
  return l;
}

void FreeLaunch(Launch* l) {
  if (l->param != nullptr) ::operator delete(l->param, kParamAlign);
  delete l;
}

// A captured graph and an instantiated one: the launches in capture order.
struct Graph {
  std::vector<Launch*> nodes;
};

// Streams being captured and the live graph handles.
struct Captures {
  std::mutex mu;
  std::map<CUstream, Graph*> active;
  std::set<Graph*> graphs;
  std::set<Graph*> execs;
};

Captures& captures() {
  static auto* c = new Captures;  // leaked, as handles()
  return *c;
}

void FreeGraph(Graph* g) {
  for (Launch* l : g->nodes) FreeLaunch(l);
  delete g;
}

// Frees a live graph or executable graph handle; a stale one gives CUDA_ERROR_INVALID_HANDLE.
CUresult DestroyGraph(std::set<Graph*> Captures::*live, void* handle) {
  Captures& c = captures();
  std::lock_guard<std::mutex> lock(c.mu);
  auto* g = static_cast<Graph*>(handle);
  if ((c.*live).erase(g) == 0) return CUDA_ERROR_INVALID_HANDLE;
  FreeGraph(g);
  return CUDA_SUCCESS;
}

}  // namespace

extern "C" {

// The image is a fatbin the CPU cannot run; any non-null one loads.
CUresult cuModuleLoadData(CUmodule* module, const void* image) {
  if (module == nullptr || image == nullptr) return CUDA_ERROR_INVALID_VALUE;
  auto* m = new Module;
  std::lock_guard<std::mutex> lock(handles().mu);
  handles().modules.insert(m);
  *module = reinterpret_cast<CUmodule>(m);
  return CUDA_SUCCESS;
}

CUresult cuModuleUnload(CUmodule hmod) {
  auto* m = reinterpret_cast<Module*>(hmod);
  Handles& h = handles();
  std::lock_guard<std::mutex> lock(h.mu);
  if (h.modules.erase(m) == 0) return CUDA_ERROR_INVALID_HANDLE;
  for (Function* f : m->functions) {
    h.functions.erase(f);
    delete f;
  }
  delete m;
  return CUDA_SUCCESS;
}

CUresult cuModuleGetFunction(CUfunction* hfunc, CUmodule hmod, const char* name) {
  if (hfunc == nullptr || name == nullptr) return CUDA_ERROR_INVALID_VALUE;
  auto* m = reinterpret_cast<Module*>(hmod);
  Handles& h = handles();
  std::lock_guard<std::mutex> lock(h.mu);
  if (h.modules.count(m) == 0) return CUDA_ERROR_INVALID_HANDLE;
  for (Function* f : m->functions) {
    if (f->name == name) {
      *hfunc = reinterpret_cast<CUfunction>(f);
      return CUDA_SUCCESS;
    }
  }
  const std::string twin_name = std::string(name) + "_host";
  auto twin = reinterpret_cast<HostTwin>(dlsym(RTLD_DEFAULT, twin_name.c_str()));
  if (twin == nullptr) return CUDA_ERROR_NOT_FOUND;
  const auto* bytes =
      static_cast<const unsigned long*>(dlsym(RTLD_DEFAULT, (twin_name + "_param_bytes").c_str()));
  auto* f = new Function{name, twin, bytes != nullptr ? size_t(*bytes) : 0};
  m->functions.push_back(f);
  h.functions.insert(f);
  *hfunc = reinterpret_cast<CUfunction>(f);
  return CUDA_SUCCESS;
}

// One-dimensional grids and blocks only (the twins' shape); `extra` is not supported.
CUresult cuLaunchKernel(CUfunction f, unsigned int gridDimX, unsigned int gridDimY,
                        unsigned int gridDimZ, unsigned int blockDimX, unsigned int blockDimY,
                        unsigned int blockDimZ, unsigned int sharedMemBytes, CUstream hStream,
                        void** kernelParams, void** extra) {
  if (extra != nullptr) return CUDA_ERROR_NOT_SUPPORTED;
  if (gridDimX == 0 || blockDimX == 0 || gridDimY != 1 || gridDimZ != 1 || blockDimY != 1 ||
      blockDimZ != 1) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  auto* fn = reinterpret_cast<Function*>(f);
  Function kernel;
  {
    std::lock_guard<std::mutex> lock(handles().mu);
    if (handles().functions.count(fn) == 0) return CUDA_ERROR_INVALID_HANDLE;
    kernel = *fn;
  }
  if (kernel.param_bytes > 0 && (kernelParams == nullptr || kernelParams[0] == nullptr)) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  auto* l = new Launch{};
  l->name = kernel.name;
  l->twin = kernel.twin;
  l->param_bytes = kernel.param_bytes;
  if (kernel.param_bytes > 0) {
    l->param = ::operator new(kernel.param_bytes, kParamAlign);
    std::memcpy(l->param, kernelParams[0], kernel.param_bytes);
  }
  l->grid_x = gridDimX;
  l->block_x = blockDimX;
  CUdevice device = 0;
  l->device = cuCtxGetDevice(&device) == CUDA_SUCCESS ? int(device) : 0;
  l->stream = hStream;
  {
    Captures& c = captures();
    std::lock_guard<std::mutex> lock(c.mu);
    const auto it = c.active.find(hStream);
    if (it != c.active.end()) {  // recorded, not run
      it->second->nodes.push_back(l);
      return CUDA_SUCCESS;
    }
  }
  l->correlation = ncclsimKernelLaunch();
  ncclsim::resolveStream(hStream)->enqueue(runLaunch, l);
  return CUDA_SUCCESS;
}

// The legacy and per-thread default streams cannot be captured, as on a real driver.
CUresult cuStreamBeginCapture_v2(CUstream hStream, CUstreamCaptureMode mode) {
  if (hStream == nullptr || hStream == CU_STREAM_LEGACY || hStream == CU_STREAM_PER_THREAD) {
    return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
  }
  if (mode != CU_STREAM_CAPTURE_MODE_GLOBAL && mode != CU_STREAM_CAPTURE_MODE_THREAD_LOCAL &&
      mode != CU_STREAM_CAPTURE_MODE_RELAXED) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  Captures& c = captures();
  std::lock_guard<std::mutex> lock(c.mu);
  if (!c.active.emplace(hStream, nullptr).second) return CUDA_ERROR_ILLEGAL_STATE;
  c.active[hStream] = new Graph;
  return CUDA_SUCCESS;
}

CUresult cuStreamEndCapture(CUstream hStream, CUgraph* phGraph) {
  if (phGraph == nullptr) return CUDA_ERROR_INVALID_VALUE;
  Captures& c = captures();
  std::lock_guard<std::mutex> lock(c.mu);
  const auto it = c.active.find(hStream);
  if (it == c.active.end()) return CUDA_ERROR_ILLEGAL_STATE;
  c.graphs.insert(it->second);
  *phGraph = reinterpret_cast<CUgraph>(it->second);
  c.active.erase(it);
  return CUDA_SUCCESS;
}

CUresult cuGraphInstantiateWithFlags(CUgraphExec* phGraphExec, CUgraph hGraph,
                                     unsigned long long flags) {
  if (phGraphExec == nullptr || flags != 0) return CUDA_ERROR_INVALID_VALUE;
  Captures& c = captures();
  std::lock_guard<std::mutex> lock(c.mu);
  auto* g = reinterpret_cast<Graph*>(hGraph);
  if (c.graphs.count(g) == 0) return CUDA_ERROR_INVALID_HANDLE;
  auto* e = new Graph;
  for (const Launch* l : g->nodes) e->nodes.push_back(CloneLaunch(*l));
  c.execs.insert(e);
  *phGraphExec = reinterpret_cast<CUgraphExec>(e);
  return CUDA_SUCCESS;
}

// Each node runs as a launch of its own on hStream, in capture order, with its captured parameter.
CUresult cuGraphLaunch(CUgraphExec hGraphExec, CUstream hStream) {
  std::vector<Launch*> run;
  {
    Captures& c = captures();
    std::lock_guard<std::mutex> lock(c.mu);
    auto* e = reinterpret_cast<Graph*>(hGraphExec);
    if (c.execs.count(e) == 0) return CUDA_ERROR_INVALID_HANDLE;
    if (c.active.count(hStream) != 0) return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
    for (const Launch* l : e->nodes) run.push_back(CloneLaunch(*l));
  }
  for (Launch* l : run) {
    l->stream = hStream;
    l->correlation = ncclsimKernelLaunch();
    ncclsim::resolveStream(hStream)->enqueue(runLaunch, l);
  }
  return CUDA_SUCCESS;
}

CUresult cuGraphExecDestroy(CUgraphExec hGraphExec) {
  return DestroyGraph(&Captures::execs, hGraphExec);
}

CUresult cuGraphDestroy(CUgraph hGraph) {
  return DestroyGraph(&Captures::graphs, hGraph);
}

}  // extern "C"

bool ncclsim::streamCapturing(CUstream s) {
  Captures& c = captures();
  std::lock_guard<std::mutex> lock(c.mu);
  return c.active.count(s) != 0;
}

// The per-thread-default-stream name (the emulator has one default stream).
extern "C" __attribute__((alias("cuLaunchKernel"))) decltype(cuLaunchKernel) cuLaunchKernel_ptsz;
