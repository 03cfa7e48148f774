// The emulated libcuda.so.1's modules and launches: a kernel NAME runs as the host twin NAME_host
// this executable exports (it is linked with its symbols in the dynamic table), in stream order,
// with its one by-value parameter copied at launch.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <thread>

#include <cuda.h>

#include "sim/emulator/kernel_activity.h"
#include "tests/sim/emulator/child_check.h"
#include "tests/sim/emulator/rank_harness.h"

namespace {

// Large enough that a driver copying a pointer's worth instead of the declared size is caught.
struct TwinParam {
  int value;
  char tail[60];
};

// What ran on the stream, in order: host functions record their argument, the twin its
// parameter's value (and the shape it was launched with).
struct Trace {
  int seen[16];
  unsigned grid[16];
  unsigned block[16];
  bool tail_intact[16];
  std::atomic<int> n{0};
  void add(int v, unsigned g = 0, unsigned b = 0, bool tail = true) {
    const int i = n++;
    if (i >= 16) return;
    seen[i] = v;
    grid[i] = g;
    block[i] = b;
    tail_intact[i] = tail;
  }
};

Trace g_trace;

void recordHost(void* v) {
  g_trace.add(int(reinterpret_cast<intptr_t>(v)));
}

struct Gate {
  std::atomic<bool> open{false};
  static void wait(void* p) {
    while (!static_cast<Gate*>(p)->open.load()) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
  }
};

bool tailIntact(const TwinParam& p) {
  for (size_t i = 0; i < sizeof p.tail; ++i) {
    if (p.tail[i] != char(i + 1)) return false;
  }
  return true;
}

const char kImage[] = "not a fatbin";

}  // namespace

// The twins of kernels "ncclsimtest_twin" (one TwinParam) and "ncclsimtest_bare" (no parameter).
extern "C" __attribute__((visibility("default"))) void ncclsimtest_twin_host(void** params,
                                                                             unsigned grid_x,
                                                                             unsigned block_x) {
  const auto* p = static_cast<const TwinParam*>(params[0]);
  g_trace.add(p->value, grid_x, block_x, tailIntact(*p));
}
extern "C" __attribute__((visibility("default")))
const unsigned long ncclsimtest_twin_host_param_bytes = sizeof(TwinParam);

extern "C" __attribute__((visibility("default"))) void ncclsimtest_bare_host(void** params,
                                                                             unsigned grid_x,
                                                                             unsigned block_x) {
  g_trace.add(params == nullptr ? -1 : -2, grid_x, block_x);
}

namespace {

TEST(KernelLaunch, TwinRunsInStreamOrderWithItsParameterCopiedAtLaunch) {
  ncclsim_test::runInOneRank([] {
    CUmodule mod = nullptr;
    CUfunction fn = nullptr, same = nullptr;
    CUstream s = nullptr;
    CHILD_CHECK(cuModuleLoadData(&mod, kImage) == CUDA_SUCCESS);
    CHILD_CHECK(cuModuleGetFunction(&fn, mod, "ncclsimtest_twin") == CUDA_SUCCESS);
    CHILD_CHECK(cuModuleGetFunction(&same, mod, "ncclsimtest_twin") == CUDA_SUCCESS);
    CHILD_CHECK(same == fn);
    CHILD_CHECK(cuStreamCreate(&s, 0) == CUDA_SUCCESS);
    static Gate gate;
    CHILD_CHECK(cuLaunchHostFunc(s, Gate::wait, &gate) == CUDA_SUCCESS);
    CHILD_CHECK(cuLaunchHostFunc(s, recordHost, reinterpret_cast<void*>(1)) == CUDA_SUCCESS);
    TwinParam param{};
    param.value = 7;
    for (size_t i = 0; i < sizeof param.tail; ++i) param.tail[i] = char(i + 1);
    void* params[] = {&param};
    CHILD_CHECK(cuLaunchKernel(fn, 3, 1, 1, 128, 1, 1, 0, s, params, nullptr) == CUDA_SUCCESS);
    // Changed while the launch waits behind the gate: the twin must see the launch's copy.
    param.value = 8;
    std::memset(param.tail, 0, sizeof param.tail);
    CHILD_CHECK(cuLaunchHostFunc(s, recordHost, reinterpret_cast<void*>(3)) == CUDA_SUCCESS);
    CHILD_CHECK(g_trace.n.load() == 0);
    gate.open = true;
    CHILD_CHECK(cuStreamSynchronize(s) == CUDA_SUCCESS);
    CHILD_CHECK(g_trace.n.load() == 3);
    CHILD_CHECK(g_trace.seen[0] == 1 && g_trace.seen[1] == 7 && g_trace.seen[2] == 3);
    CHILD_CHECK(g_trace.grid[1] == 3 && g_trace.block[1] == 128 && g_trace.tail_intact[1]);
    CHILD_CHECK(cuModuleUnload(mod) == CUDA_SUCCESS);
    return 0;
  });
}

TEST(KernelLaunch, TwinWithoutDeclaredParameterGetsNone) {
  ncclsim_test::runInOneRank([] {
    CUmodule mod = nullptr;
    CUfunction fn = nullptr;
    CHILD_CHECK(cuModuleLoadData(&mod, kImage) == CUDA_SUCCESS);
    CHILD_CHECK(cuModuleGetFunction(&fn, mod, "ncclsimtest_bare") == CUDA_SUCCESS);
    CHILD_CHECK(cuLaunchKernel(fn, 1, 1, 1, 32, 1, 1, 0, nullptr, nullptr, nullptr) ==
                CUDA_SUCCESS);
    CHILD_CHECK(cuStreamSynchronize(nullptr) == CUDA_SUCCESS);
    CHILD_CHECK(g_trace.n.load() == 1 && g_trace.seen[0] == -1 && g_trace.block[0] == 32);
    return 0;
  });
}

// The emulated CUPTI sees each twin's launch as a kernel of the kernel's name.
TEST(KernelLaunch, EachLaunchIsAKernelOfTheEmulatedGpu) {
  ncclsim_test::runInOneRank([] {
    static std::atomic<uint32_t> launched{0};
    static std::atomic<uint32_t> ran{0};
    static char name[64];
    ncclsimKernelTap tap{};
    tap.launched = [](uint32_t correlation, void*) { launched = correlation; };
    tap.ran = [](const ncclsimKernelRecord* k, void*) {
      std::snprintf(name, sizeof name, "%s", k->name);
      ran = k->end_ns >= k->start_ns ? k->correlation : 0;
    };
    ncclsimSetKernelTap(&tap);
    CUmodule mod = nullptr;
    CUfunction fn = nullptr;
    CHILD_CHECK(cuModuleLoadData(&mod, kImage) == CUDA_SUCCESS);
    CHILD_CHECK(cuModuleGetFunction(&fn, mod, "ncclsimtest_bare") == CUDA_SUCCESS);
    CHILD_CHECK(cuLaunchKernel(fn, 1, 1, 1, 32, 1, 1, 0, nullptr, nullptr, nullptr) ==
                CUDA_SUCCESS);
    CHILD_CHECK(launched.load() != 0);
    CHILD_CHECK(cuStreamSynchronize(nullptr) == CUDA_SUCCESS);
    CHILD_CHECK(ran.load() == launched.load());
    CHILD_CHECK(std::strcmp(name, "ncclsimtest_bare") == 0);
    return 0;
  });
}

TEST(KernelLaunch, RefusedLaunchesRunNothing) {
  ncclsim_test::runInOneRank([] {
    CUmodule mod = nullptr;
    CUfunction fn = nullptr, missing = nullptr;
    CHILD_CHECK(cuModuleLoadData(&mod, nullptr) == CUDA_ERROR_INVALID_VALUE);
    CHILD_CHECK(cuModuleLoadData(&mod, kImage) == CUDA_SUCCESS);
    // "ncclsimtest_bare_host" exists, but no kernel is named that with "_host" appended.
    CHILD_CHECK(cuModuleGetFunction(&missing, mod, "ncclsimtest_bare_host") ==
                CUDA_ERROR_NOT_FOUND);
    CHILD_CHECK(cuModuleGetFunction(&missing, mod, "ncclsimtest_no_such_kernel") ==
                CUDA_ERROR_NOT_FOUND);
    CHILD_CHECK(cuModuleGetFunction(&fn, mod, "ncclsimtest_twin") == CUDA_SUCCESS);
    TwinParam param{};
    void* params[] = {&param};
    CHILD_CHECK(cuLaunchKernel(fn, 1, 2, 1, 32, 1, 1, 0, nullptr, params, nullptr) ==
                CUDA_ERROR_INVALID_VALUE);
    CHILD_CHECK(cuLaunchKernel(fn, 1, 1, 2, 32, 1, 1, 0, nullptr, params, nullptr) ==
                CUDA_ERROR_INVALID_VALUE);
    CHILD_CHECK(cuLaunchKernel(fn, 1, 1, 1, 32, 2, 1, 0, nullptr, params, nullptr) ==
                CUDA_ERROR_INVALID_VALUE);
    CHILD_CHECK(cuLaunchKernel(fn, 1, 1, 1, 32, 1, 2, 0, nullptr, params, nullptr) ==
                CUDA_ERROR_INVALID_VALUE);
    CHILD_CHECK(cuLaunchKernel(fn, 0, 1, 1, 32, 1, 1, 0, nullptr, params, nullptr) ==
                CUDA_ERROR_INVALID_VALUE);
    CHILD_CHECK(cuLaunchKernel(fn, 1, 1, 1, 32, 1, 1, 0, nullptr, nullptr, nullptr) ==
                CUDA_ERROR_INVALID_VALUE);
    void* extra[] = {CU_LAUNCH_PARAM_END};
    CHILD_CHECK(cuLaunchKernel(fn, 1, 1, 1, 32, 1, 1, 0, nullptr, nullptr, extra) ==
                CUDA_ERROR_NOT_SUPPORTED);
    CHILD_CHECK(cuModuleUnload(mod) == CUDA_SUCCESS);
    CHILD_CHECK(cuLaunchKernel(fn, 1, 1, 1, 32, 1, 1, 0, nullptr, params, nullptr) ==
                CUDA_ERROR_INVALID_HANDLE);
    CHILD_CHECK(cuModuleGetFunction(&fn, mod, "ncclsimtest_twin") == CUDA_ERROR_INVALID_HANDLE);
    CHILD_CHECK(cuModuleUnload(mod) == CUDA_ERROR_INVALID_HANDLE);
    CHILD_CHECK(cuStreamSynchronize(nullptr) == CUDA_SUCCESS);
    CHILD_CHECK(g_trace.n.load() == 0);
    return 0;
  });
}

// Stream capture (CUDA graphs): a capturing stream's launches are recorded with their parameters
// copied then, run only when the instantiated graph is launched, once per launch, in capture
// order, on the stream it is launched on; the legacy stream cannot be captured.
TEST(KernelLaunch, CapturedLaunchesRunAtEachGraphLaunchWithTheirCapturedParameters) {
  ncclsim_test::runInOneRank([] {
    CUmodule mod = nullptr;
    CUfunction fn = nullptr;
    CUstream s = nullptr, other = nullptr;
    CHILD_CHECK(cuModuleLoadData(&mod, kImage) == CUDA_SUCCESS);
    CHILD_CHECK(cuModuleGetFunction(&fn, mod, "ncclsimtest_twin") == CUDA_SUCCESS);
    CHILD_CHECK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING) == CUDA_SUCCESS);
    CHILD_CHECK(cuStreamCreate(&other, CU_STREAM_NON_BLOCKING) == CUDA_SUCCESS);
    CHILD_CHECK(cuStreamBeginCapture(nullptr, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL) ==
                CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
    CHILD_CHECK(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL) == CUDA_SUCCESS);
    CHILD_CHECK(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL) ==
                CUDA_ERROR_ILLEGAL_STATE);
    CUstreamCaptureStatus status = CU_STREAM_CAPTURE_STATUS_NONE;
    CHILD_CHECK(cuStreamIsCapturing(s, &status) == CUDA_SUCCESS);
    CHILD_CHECK(status == CU_STREAM_CAPTURE_STATUS_ACTIVE);
    CHILD_CHECK(cuStreamIsCapturing(other, &status) == CUDA_SUCCESS);
    CHILD_CHECK(status == CU_STREAM_CAPTURE_STATUS_NONE);
    TwinParam param{};
    for (size_t i = 0; i < sizeof param.tail; ++i) param.tail[i] = char(i + 1);
    void* params[] = {&param};
    param.value = 5;
    CHILD_CHECK(cuLaunchKernel(fn, 2, 1, 1, 64, 1, 1, 0, s, params, nullptr) == CUDA_SUCCESS);
    param.value = 6;
    CHILD_CHECK(cuLaunchKernel(fn, 4, 1, 1, 96, 1, 1, 0, s, params, nullptr) == CUDA_SUCCESS);
    CUgraph graph = nullptr;
    CHILD_CHECK(cuStreamEndCapture(s, &graph) == CUDA_SUCCESS);
    CHILD_CHECK(cuStreamIsCapturing(s, &status) == CUDA_SUCCESS);
    CHILD_CHECK(status == CU_STREAM_CAPTURE_STATUS_NONE);
    CHILD_CHECK(cuStreamSynchronize(s) == CUDA_SUCCESS);
    CHILD_CHECK(g_trace.n.load() == 0);  // recorded, not run
    param.value = 9;                     // after capture: the graph keeps its copies
    std::memset(param.tail, 0, sizeof param.tail);
    CUgraphExec exec = nullptr;
    CHILD_CHECK(cuGraphInstantiate(&exec, graph, 0) == CUDA_SUCCESS);
    CHILD_CHECK(cuGraphDestroy(graph) == CUDA_SUCCESS);  // the executable keeps its own
    // One launch after the other (two streams' work has no order between them).
    CHILD_CHECK(cuGraphLaunch(exec, s) == CUDA_SUCCESS);
    CHILD_CHECK(cuStreamSynchronize(s) == CUDA_SUCCESS);
    CHILD_CHECK(cuGraphLaunch(exec, other) == CUDA_SUCCESS);
    CHILD_CHECK(cuStreamSynchronize(other) == CUDA_SUCCESS);
    CHILD_CHECK(g_trace.n.load() == 4);
    for (int i = 0; i < 4; ++i) {
      CHILD_CHECK(g_trace.seen[i] == 5 + i % 2 && g_trace.tail_intact[i]);
      CHILD_CHECK(g_trace.grid[i] == (i % 2 == 0 ? 2u : 4u));
    }
    CHILD_CHECK(cuGraphExecDestroy(exec) == CUDA_SUCCESS);
    CHILD_CHECK(cuGraphExecDestroy(exec) == CUDA_ERROR_INVALID_HANDLE);
    CHILD_CHECK(cuGraphLaunch(exec, s) == CUDA_ERROR_INVALID_HANDLE);
    CHILD_CHECK(cuStreamEndCapture(s, &graph) == CUDA_ERROR_ILLEGAL_STATE);
    CHILD_CHECK(cuModuleUnload(mod) == CUDA_SUCCESS);
    return 0;
  });
}

}  // namespace
