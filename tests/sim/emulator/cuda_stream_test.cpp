// The emulated libcuda.so.1: ordered asynchronous streams, events, host functions, entry points.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <thread>

#include <cuda.h>

#include "sim/emulator/backoff_wait.h"
#include "sim/emulator/sim_stream.h"
#include "tests/sim/emulator/child_check.h"
#include "tests/sim/emulator/rank_harness.h"

namespace {

void sleepMs(int ms) {
  std::this_thread::sleep_for(std::chrono::milliseconds(ms));
}

// Host functions that block until released: the way tests hold a stream "busy".
struct Gate {
  std::atomic<bool> open{false};
  static void wait(void* p) {
    while (!static_cast<Gate*>(p)->open.load()) sleepMs(1);
  }
};

// Each test runs in a forked child: streams must not exist in the gtest parent before fork.
TEST(CudaStreams, EventIsNotReadyUntilTheStreamPassesIt) {
  ncclsim_test::runInOneRank([] {
    CUstream s;
    CUevent start, end;
    CHILD_CHECK(cuInit(0) == CUDA_SUCCESS);
    CHILD_CHECK(cuStreamCreate(&s, 0) == CUDA_SUCCESS);
    CHILD_CHECK(cuEventCreate(&start, 0) == CUDA_SUCCESS);
    CHILD_CHECK(cuEventCreate(&end, 0) == CUDA_SUCCESS);
    static Gate gate;
    CHILD_CHECK(cuEventRecord(start, s) == CUDA_SUCCESS);
    CHILD_CHECK(cuLaunchHostFunc(s, Gate::wait, &gate) == CUDA_SUCCESS);
    CHILD_CHECK(cuEventRecord(end, s) == CUDA_SUCCESS);
    // The stream's worker may reach `start` late under load, so the lower bound on the elapsed
    // time is measured from the moment the host saw `start` passed, not from the record call.
    CHILD_CHECK(cuEventSynchronize(start) == CUDA_SUCCESS);
    const uint64_t start_seen_ns = ncclsim::nowNs();
    sleepMs(30);
    CHILD_CHECK(cuEventQuery(start) == CUDA_SUCCESS);
    CHILD_CHECK(cuEventQuery(end) == CUDA_ERROR_NOT_READY);
    CHILD_CHECK(cuStreamQuery(s) == CUDA_ERROR_NOT_READY);
    float ms = 0;
    CHILD_CHECK(cuEventElapsedTime(&ms, start, end) == CUDA_ERROR_NOT_READY);
    const uint64_t gate_opened_ns = ncclsim::nowNs();
    gate.open = true;
    CHILD_CHECK(cuEventSynchronize(end) == CUDA_SUCCESS);
    CHILD_CHECK(cuEventQuery(end) == CUDA_SUCCESS);
    CHILD_CHECK(cuEventElapsedTime(&ms, start, end) == CUDA_SUCCESS);
    // start passed before start_seen_ns and end after gate_opened_ns, on the same clock.
    CHILD_CHECK(double(ms) * 1e6 >= double(gate_opened_ns - start_seen_ns) - 1e3);
    CHILD_CHECK(cuStreamSynchronize(s) == CUDA_SUCCESS);
    CHILD_CHECK(cuStreamQuery(s) == CUDA_SUCCESS);
    CHILD_CHECK(cuEventDestroy(start) == CUDA_SUCCESS);
    CHILD_CHECK(cuStreamDestroy(s) == CUDA_SUCCESS);
    return 0;
  });
}

TEST(CudaStreams, WorkRunsInOrderOnEachStream) {
  ncclsim_test::runInOneRank([] {
    static int seen[64];
    static std::atomic<int> n{0};
    struct Item {
      int v;
    };
    static Item items[64];
    CUstream s;
    cuStreamCreate(&s, 0);
    for (int i = 0; i < 64; ++i) {
      items[i].v = i;
      ncclsimStreamEnqueue(
          s, [](void* p) { seen[n++] = static_cast<Item*>(p)->v; }, &items[i]);
    }
    CHILD_CHECK(cuStreamSynchronize(s) == CUDA_SUCCESS);
    CHILD_CHECK(n == 64);
    for (int i = 0; i < 64; ++i) CHILD_CHECK(seen[i] == i);
    return 0;
  });
}

TEST(CudaStreams, BlockedStreamDoesNotHangDrainOrExit) {
  ncclsim_test::runInOneRank([] {
    CUstream s;
    cuStreamCreate(&s, 0);
    static Gate never;
    cuLaunchHostFunc(s, Gate::wait, &never);
    auto t0 = std::chrono::steady_clock::now();
    CHILD_CHECK(ncclsimStreamsDrain(100) == 1);
    auto ms =
        std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - t0)
            .count();
    CHILD_CHECK(ms < 2000);
    CHILD_CHECK(cuStreamQuery(s) == CUDA_ERROR_NOT_READY);
    setenv("NCCLSIM_EXIT_DRAIN_MS", "50", 1);
    std::exit(0);  // runs the exit-time drain with a blocked worker; must still exit
  });
}

TEST(CudaStreams, ProcAddressFindsEntryPointsByBaseName) {
  ncclsim_test::runInOneRank([] {
    void* fn = nullptr;
    CUdriverProcAddressQueryResult status;
    CHILD_CHECK(cuGetProcAddress("cuEventElapsedTime", &fn, 13000, 0, &status) == CUDA_SUCCESS);
    CHILD_CHECK(fn == reinterpret_cast<void*>(&cuEventElapsedTime));
    CHILD_CHECK(status == CU_GET_PROC_ADDRESS_SUCCESS);
    CHILD_CHECK(cuGetProcAddress("cuStreamDestroy_v2", &fn, 13000, 0, &status) == CUDA_SUCCESS);
    CHILD_CHECK(fn == reinterpret_cast<void*>(&cuStreamDestroy));
    CHILD_CHECK(cuGetProcAddress("cuNoSuchThing", &fn, 13000, 0, &status) == CUDA_ERROR_NOT_FOUND);
    CHILD_CHECK(fn == nullptr && status == CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND);
    const char* s = nullptr;
    CHILD_CHECK(cuGetErrorName(CUDA_ERROR_NOT_READY, &s) == CUDA_SUCCESS);
    CHILD_CHECK(std::strcmp(s, "CUDA_ERROR_NOT_READY") == 0);
    int count = 0, version = 0;
    CHILD_CHECK(cuDeviceGetCount(&count) == CUDA_SUCCESS && count >= 1);
    CHILD_CHECK(cuDriverGetVersion(&version) == CUDA_SUCCESS && version == CUDA_VERSION);
    CUcontext ctx = nullptr;
    CHILD_CHECK(cuCtxGetCurrent(&ctx) == CUDA_SUCCESS && ctx != nullptr);
    return 0;
  });
}

}  // namespace
