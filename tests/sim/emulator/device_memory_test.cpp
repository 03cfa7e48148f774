// The emulated libcuda.so.1's device memory: allocations backed by shared memory objects, copies
// and pointer queries, and IPC handles through which another rank process maps an allocation.
#include <gtest/gtest.h>

#include <dirent.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include <cuda.h>

#include "tests/sim/emulator/child_check.h"
#include "tests/sim/emulator/rank_harness.h"

namespace {

// Shared memory objects of this process's allocations (docs/emulator.md names them).
int segmentsOf(pid_t pid) {
  char prefix[96];
  std::snprintf(prefix, sizeof prefix, "ncclsim-%s-dm%x-", std::getenv("NCCLSIM_JOB_TAG"),
                unsigned(pid));
  int n = 0;
  DIR* d = opendir("/dev/shm");
  if (d == nullptr) return -1;
  while (dirent* e = readdir(d)) n += std::strncmp(e->d_name, prefix, std::strlen(prefix)) == 0;
  closedir(d);
  return n;
}

char* host(CUdeviceptr p) {
  return reinterpret_cast<char*>(uintptr_t(p));
}

TEST(DeviceMemory, CopiesAndFillsStayInsideAnAllocation) {
  ncclsim_test::runInOneRank([] {
    const size_t bytes = 4096 + 13;
    CUdeviceptr a = 0, b = 0;
    CHILD_CHECK(cuMemAlloc(&a, bytes) == CUDA_SUCCESS && a != 0);
    CHILD_CHECK(cuMemAlloc(&b, bytes) == CUDA_SUCCESS && b != a);
    std::vector<unsigned char> in(bytes), out(bytes, 0);
    for (size_t i = 0; i < bytes; ++i) in[i] = static_cast<unsigned char>(i * 7 + 1);
    CHILD_CHECK(cuMemcpyHtoD(a, in.data(), bytes) == CUDA_SUCCESS);
    CHILD_CHECK(cuMemcpyDtoD(b, a, bytes) == CUDA_SUCCESS);
    CHILD_CHECK(cuMemsetD8(a, 0xab, 100) == CUDA_SUCCESS);
    CHILD_CHECK(cuMemcpyDtoH(out.data(), b, bytes) == CUDA_SUCCESS);
    CHILD_CHECK(out == in);
    CHILD_CHECK(cuMemcpyDtoH(out.data(), a, bytes) == CUDA_SUCCESS);
    CHILD_CHECK(out[0] == 0xab && out[99] == 0xab && out[100] == in[100]);
    CHILD_CHECK(cuMemcpy(a + 1, CUdeviceptr(uintptr_t(in.data())), 1) == CUDA_SUCCESS);
    CHILD_CHECK(static_cast<unsigned char>(host(a)[1]) == in[0]);
    // One byte past the end, or host memory where device memory is expected.
    CHILD_CHECK(cuMemcpyHtoD(a + 1, in.data(), bytes) == CUDA_ERROR_INVALID_VALUE);
    CHILD_CHECK(cuMemsetD8(a + bytes, 0, 1) == CUDA_ERROR_INVALID_VALUE);
    CHILD_CHECK(cuMemcpyHtoD(CUdeviceptr(uintptr_t(out.data())), in.data(), 8) ==
                CUDA_ERROR_INVALID_VALUE);
    CHILD_CHECK(cuMemcpyDtoH(out.data(), CUdeviceptr(uintptr_t(in.data())), 8) ==
                CUDA_ERROR_INVALID_VALUE);
    CHILD_CHECK(cuMemAlloc(&a, 0) == CUDA_ERROR_INVALID_VALUE);
    CHILD_CHECK(cuMemFree(b) == CUDA_SUCCESS);
    CHILD_CHECK(cuMemcpyDtoH(out.data(), b, 1) == CUDA_ERROR_INVALID_VALUE);
    return 0;
  });
}

TEST(DeviceMemory, PointerQueriesFindTheAllocationOfAnInteriorPointer) {
  ncclsim_test::runInOneRank([] {
    CUdeviceptr a = 0;
    CHILD_CHECK(cuMemAlloc(&a, 1000) == CUDA_SUCCESS);
    CUdeviceptr start = 0;
    size_t size = 0;
    unsigned int type = 0;
    CHILD_CHECK(cuPointerGetAttribute(&start, CU_POINTER_ATTRIBUTE_RANGE_START_ADDR, a + 999) ==
                CUDA_SUCCESS);
    CHILD_CHECK(start == a);
    CHILD_CHECK(cuPointerGetAttribute(&size, CU_POINTER_ATTRIBUTE_RANGE_SIZE, a + 10) ==
                CUDA_SUCCESS);
    CHILD_CHECK(size == 1000);
    CHILD_CHECK(cuPointerGetAttribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, a) == CUDA_SUCCESS);
    CHILD_CHECK(type == CU_MEMORYTYPE_DEVICE);
    start = 0;
    size = 0;
    CHILD_CHECK(cuMemGetAddressRange(&start, &size, a + 500) == CUDA_SUCCESS);
    CHILD_CHECK(start == a && size == 1000);
    int on_stack = 0;
    CHILD_CHECK(cuPointerGetAttribute(&start, CU_POINTER_ATTRIBUTE_RANGE_START_ADDR,
                                      CUdeviceptr(uintptr_t(&on_stack))) ==
                CUDA_ERROR_INVALID_VALUE);
    CHILD_CHECK(cuPointerGetAttribute(&start, CU_POINTER_ATTRIBUTE_RANGE_START_ADDR, a + 1000) ==
                CUDA_ERROR_INVALID_VALUE);
    // Only the base frees an allocation, once.
    CHILD_CHECK(cuMemFree(a + 1) == CUDA_ERROR_INVALID_VALUE);
    CHILD_CHECK(cuMemFree(a) == CUDA_SUCCESS);
    CHILD_CHECK(cuMemFree(a) == CUDA_ERROR_INVALID_VALUE);
    return 0;
  });
}

TEST(DeviceMemory, FreeAndExitRemoveTheSharedMemoryObjects) {
  ncclsim_test::runInOneRank([] {
    CUdeviceptr a = 0, b = 0;
    CHILD_CHECK(segmentsOf(getpid()) == 0);
    CHILD_CHECK(cuMemAlloc(&a, 64) == CUDA_SUCCESS && cuMemAlloc(&b, 64) == CUDA_SUCCESS);
    CHILD_CHECK(segmentsOf(getpid()) == 2);
    CHILD_CHECK(cuMemFree(a) == CUDA_SUCCESS);
    CHILD_CHECK(segmentsOf(getpid()) == 1);
    CHILD_CHECK(cuMemFree(b) == CUDA_SUCCESS);
    CHILD_CHECK(segmentsOf(getpid()) == 0);
    // A process that exits without freeing leaves nothing behind either.
    pid_t leaver = fork();
    if (leaver == 0) {
      CUdeviceptr c = 0;
      if (cuMemAlloc(&c, 64) != CUDA_SUCCESS || segmentsOf(getpid()) != 1) _exit(3);
      std::exit(0);
    }
    int status = 0;
    CHILD_CHECK(waitpid(leaver, &status, 0) == leaver);
    CHILD_CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    CHILD_CHECK(segmentsOf(leaver) == 0);
    return 0;
  });
}

TEST(DeviceMemory, PinnedHostMemoryIsMappedAtItsOwnAddress) {
  ncclsim_test::runInOneRank([] {
    void* p = nullptr;
    CHILD_CHECK(cuMemHostAlloc(&p, 100, CU_MEMHOSTALLOC_DEVICEMAP | CU_MEMHOSTALLOC_PORTABLE) ==
                CUDA_SUCCESS);
    CUdeviceptr d = 0;
    CHILD_CHECK(cuMemHostGetDevicePointer(&d, static_cast<char*>(p) + 10, 0) == CUDA_SUCCESS);
    CHILD_CHECK(host(d) == static_cast<char*>(p) + 10);
    int on_stack = 0;
    CHILD_CHECK(cuMemHostGetDevicePointer(&d, &on_stack, 0) == CUDA_ERROR_INVALID_VALUE);
    CHILD_CHECK(cuMemHostGetDevicePointer(&d, static_cast<char*>(p) + 100, 0) ==
                CUDA_ERROR_INVALID_VALUE);
    CHILD_CHECK(cuMemFreeHost(static_cast<char*>(p) + 1) == CUDA_ERROR_INVALID_VALUE);
    CHILD_CHECK(cuMemFreeHost(p) == CUDA_SUCCESS);
    CHILD_CHECK(cuMemHostGetDevicePointer(&d, p, 0) == CUDA_ERROR_INVALID_VALUE);
    return 0;
  });
}

// What the ranks of the IPC test tell each other through pipes the parent opened for them.
struct Message {
  CUipcMemHandle handle;
  int step;
};

bool send(int fd, const Message& m) {
  return write(fd, &m, sizeof m) == ssize_t(sizeof m);
}

bool receive(int fd, int step, Message* m) {
  size_t got = 0;
  auto* p = reinterpret_cast<char*>(m);
  while (got < sizeof *m) {
    ssize_t n = read(fd, p + got, sizeof *m - got);
    if (n <= 0) return false;
    got += size_t(n);
  }
  return m->step == step;
}

constexpr size_t kBytes = 1 << 20;

unsigned char patternOf(int rank, size_t i) {
  return static_cast<unsigned char>(i * 31 + size_t(rank) * 101 + 5);
}

bool holds(const char* p, int rank, size_t from, size_t to) {
  for (size_t i = from; i < to; ++i) {
    if (static_cast<unsigned char>(p[i]) != patternOf(rank, i)) return false;
  }
  return true;
}

void fill(char* p, int rank, size_t from, size_t to) {
  for (size_t i = from; i < to; ++i) p[i] = static_cast<char>(patternOf(rank, i));
}

// Rank 0 exports its allocation (through an interior pointer, which names the same allocation);
// rank 1 reads it, writes its second half and exports its own; rank 0 sees the write and reads
// rank 1's allocation; once rank 1 has closed it, rank 0 frees it and rank 1 can no longer open it.
int exporter(int to_peer, int from_peer) {
  CUdeviceptr mine = 0;
  CHILD_CHECK(cuMemAlloc(&mine, kBytes) == CUDA_SUCCESS);
  fill(host(mine), 0, 0, kBytes);
  Message m{};
  CHILD_CHECK(cuIpcGetMemHandle(&m.handle, mine + 4096) == CUDA_SUCCESS);
  // The driver refuses a handle in the process that exported it (openucx/ucx#11603 shows
  // cuIpcOpenMemHandle failing with "invalid device context" in the same process).
  CUdeviceptr self = 0;
  CHILD_CHECK(cuIpcOpenMemHandle(&self, m.handle, CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS) ==
              CUDA_ERROR_INVALID_CONTEXT);
  m.step = 1;
  CHILD_CHECK(send(to_peer, m));
  CHILD_CHECK(receive(from_peer, 2, &m));
  CHILD_CHECK(holds(host(mine), 0, 0, kBytes / 2));
  CHILD_CHECK(holds(host(mine), 1, kBytes / 2, kBytes));
  CUdeviceptr theirs = 0;
  CHILD_CHECK(cuIpcOpenMemHandle(&theirs, m.handle, CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS) ==
              CUDA_SUCCESS);
  CHILD_CHECK(holds(host(theirs), 1, 0, kBytes));
  std::vector<char> copy(16);
  CHILD_CHECK(cuMemcpyDtoH(copy.data(), theirs + 100, copy.size()) == CUDA_SUCCESS);
  for (size_t i = 0; i < copy.size(); ++i) {
    CHILD_CHECK(static_cast<unsigned char>(copy[i]) == patternOf(1, 100 + i));
  }
  CHILD_CHECK(cuIpcCloseMemHandle(theirs) == CUDA_SUCCESS);
  CHILD_CHECK(receive(from_peer, 3, &m));
  CHILD_CHECK(cuMemFree(mine) == CUDA_SUCCESS);
  m.step = 4;
  CHILD_CHECK(send(to_peer, m));
  CHILD_CHECK(receive(from_peer, 5, &m));  // rank 1 keeps its allocation mapped until here
  return 0;
}

int importer(int to_peer, int from_peer) {
  Message m{};
  CHILD_CHECK(receive(from_peer, 1, &m));
  const CUipcMemHandle exported = m.handle;
  CUdeviceptr theirs = 0, again = 0;
  CHILD_CHECK(cuIpcOpenMemHandle(&theirs, exported, CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS) ==
              CUDA_SUCCESS);
  // Opened again: the same mapping, counted (cuda.h, cuIpcOpenMemHandle).
  CHILD_CHECK(cuIpcOpenMemHandle(&again, exported, CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS) ==
              CUDA_SUCCESS);
  CHILD_CHECK(again == theirs);
  // The handle of an interior pointer opens at the allocation's base.
  CHILD_CHECK(holds(host(theirs), 0, 0, kBytes));
  CUdeviceptr start = 0;
  size_t size = 0;
  CHILD_CHECK(cuMemGetAddressRange(&start, &size, theirs + 7) == CUDA_SUCCESS);
  CHILD_CHECK(start == theirs && size == kBytes);
  fill(host(theirs), 1, kBytes / 2, kBytes);
  CUdeviceptr mine = 0;
  CHILD_CHECK(cuMemAlloc(&mine, kBytes) == CUDA_SUCCESS);
  fill(host(mine), 1, 0, kBytes);
  CHILD_CHECK(cuIpcGetMemHandle(&m.handle, mine) == CUDA_SUCCESS);
  m.step = 2;
  CHILD_CHECK(send(to_peer, m));
  CHILD_CHECK(cuIpcCloseMemHandle(theirs) == CUDA_SUCCESS);
  CHILD_CHECK(cuIpcCloseMemHandle(theirs) == CUDA_SUCCESS);
  CHILD_CHECK(cuIpcCloseMemHandle(theirs) == CUDA_ERROR_INVALID_VALUE);
  CHILD_CHECK(cuIpcCloseMemHandle(mine) == CUDA_ERROR_INVALID_VALUE);
  m.step = 3;
  CHILD_CHECK(send(to_peer, m));
  CHILD_CHECK(receive(from_peer, 4, &m));
  CHILD_CHECK(cuIpcOpenMemHandle(&theirs, exported, CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS) ==
              CUDA_ERROR_INVALID_HANDLE);
  CUipcMemHandle garbage;
  std::memset(&garbage, 0x5a, sizeof garbage);
  CHILD_CHECK(cuIpcOpenMemHandle(&theirs, garbage, CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS) ==
              CUDA_ERROR_INVALID_VALUE);
  int on_stack = 0;
  CHILD_CHECK(cuIpcGetMemHandle(&m.handle, CUdeviceptr(uintptr_t(&on_stack))) ==
              CUDA_ERROR_INVALID_VALUE);
  m.step = 5;
  CHILD_CHECK(send(to_peer, m));
  return 0;
}

TEST(DeviceMemory, RanksShareAllocationsThroughIpcHandles) {
  int to1[2], to0[2];
  ASSERT_EQ(pipe(to1), 0);
  ASSERT_EQ(pipe(to0), 0);
  auto out = ncclsim_test::runRanks(
      2,
      [&](int rank, int, const ncclUniqueId&) {
        return rank == 0 ? exporter(to1[1], to0[0]) : importer(to0[1], to1[0]);
      },
      20000);
  for (int fd : {to1[0], to1[1], to0[0], to0[1]}) close(fd);
  std::string failures = ncclsim_test::describeFailures(out);
  EXPECT_TRUE(failures.empty()) << failures;
}

}  // namespace
