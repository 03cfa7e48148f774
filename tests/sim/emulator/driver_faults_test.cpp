// The emulated driver's fault controls (driver_faults.h), behind the scenario faults ipc_open_fails
// and device_memory_limit: while set, every cuIpcOpenMemHandle of the process fails as a driver's
// does when it cannot map the peer's memory, whatever the handle (cleared, the same handle opens
// again); an allocation past the limit fails as on a full GPU, counting what was allocated before
// and giving back what is freed.
#include <gtest/gtest.h>

#include <unistd.h>

#include <cuda.h>

#include "sim/emulator/driver_faults.h"
#include "tests/sim/emulator/child_check.h"
#include "tests/sim/emulator/rank_harness.h"

namespace {

constexpr size_t kFaultBytes = 1 << 16;

// Rank 0 exports an allocation and keeps it until rank 1 is done; rank 1 opens the handle.
int faultExporter(int to_peer, int from_peer) {
  CUdeviceptr mine = 0;
  CHILD_CHECK(cuMemAlloc(&mine, kFaultBytes) == CUDA_SUCCESS);
  CUipcMemHandle handle;
  CHILD_CHECK(cuIpcGetMemHandle(&handle, mine) == CUDA_SUCCESS);
  CHILD_CHECK(write(to_peer, &handle, sizeof handle) == ssize_t(sizeof handle));
  char done = 0;
  CHILD_CHECK(read(from_peer, &done, 1) == 1);
  CHILD_CHECK(cuMemFree(mine) == CUDA_SUCCESS);
  return 0;
}

int faultImporter(int to_peer, int from_peer) {
  CUipcMemHandle handle;
  CHILD_CHECK(read(from_peer, &handle, sizeof handle) == ssize_t(sizeof handle));
  CUdeviceptr theirs = 0;
  ncclsimSetIpcOpenFails(1);
  CHILD_CHECK(cuIpcOpenMemHandle(&theirs, handle, CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS) ==
              CUDA_ERROR_MAP_FAILED);
  CHILD_CHECK(theirs == 0);
  ncclsimSetIpcOpenFails(0);
  CHILD_CHECK(cuIpcOpenMemHandle(&theirs, handle, CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS) ==
              CUDA_SUCCESS);
  CHILD_CHECK(theirs != 0);
  CHILD_CHECK(cuIpcCloseMemHandle(theirs) == CUDA_SUCCESS);
  CHILD_CHECK(write(to_peer, "x", 1) == 1);
  return 0;
}

TEST(IpcOpenFault, FailsEveryOpenWhileSetAndNoneOnceCleared) {
  int to1[2], to0[2];
  ASSERT_EQ(pipe(to1), 0);
  ASSERT_EQ(pipe(to0), 0);
  auto out = ncclsim_test::runRanks(
      2,
      [&](int rank, int, const ncclUniqueId&) {
        return rank == 0 ? faultExporter(to1[1], to0[0]) : faultImporter(to0[1], to1[0]);
      },
      20000);
  for (int fd : {to1[0], to1[1], to0[0], to0[1]}) close(fd);
  const std::string failures = ncclsim_test::describeFailures(out);
  EXPECT_TRUE(failures.empty()) << failures;
}

int limited() {
  CUdeviceptr before = 0, a = 0, b = 0;
  CHILD_CHECK(cuMemAlloc(&before, kFaultBytes) == CUDA_SUCCESS);
  ncclsimSetDeviceMemoryLimit(3 * kFaultBytes);
  CHILD_CHECK(cuMemAlloc(&a, 2 * kFaultBytes) == CUDA_SUCCESS);  // exactly full, counting `before`
  CHILD_CHECK(cuMemAlloc(&b, 1) == CUDA_ERROR_OUT_OF_MEMORY);
  CHILD_CHECK(cuMemAlloc(&b, 4 * kFaultBytes) == CUDA_ERROR_OUT_OF_MEMORY);
  CHILD_CHECK(cuMemFree(before) == CUDA_SUCCESS);
  CHILD_CHECK(cuMemFree(before) == CUDA_ERROR_INVALID_VALUE);  // counted back once only
  CHILD_CHECK(cuMemAlloc(&b, kFaultBytes) == CUDA_SUCCESS);
  CHILD_CHECK(cuMemAlloc(&before, 1) == CUDA_ERROR_OUT_OF_MEMORY);
  ncclsimSetDeviceMemoryLimit(0);
  CHILD_CHECK(cuMemAlloc(&before, 4 * kFaultBytes) == CUDA_SUCCESS);
  for (CUdeviceptr p : {a, b, before}) CHILD_CHECK(cuMemFree(p) == CUDA_SUCCESS);
  return 0;
}

TEST(DeviceMemoryLimit, AllocationsPastItFailAndFreedMemoryCountsBack) {
  const auto out = ncclsim_test::runRanks(
      1, [](int, int, const ncclUniqueId&) { return limited(); }, 20000);
  const std::string failures = ncclsim_test::describeFailures(out);
  EXPECT_TRUE(failures.empty()) << failures;
}

}  // namespace
