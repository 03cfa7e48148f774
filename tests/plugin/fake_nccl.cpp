// A tiny stand-in for libnccl.so.2 (pnccl* and nccl* like the real one) with fixed, checkable
// behaviour: communicators are heap objects, device work "runs" instantly, and every call sets
// errno to a value the tests expect to see unchanged through the probe.
#include <nccl.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

namespace {

struct FakeComm {
  int rank;
  int nranks;
  int device;
  ncclResult_t async_error;
};

int g_group_depth = 0;
unsigned char g_next_id = 1;

// Test hooks standing in for what real NCCL does inside these calls (the profiler plugin's init
// during creation; its events during a collective).
using FakeHook = void (*)(void* arg, int rank, int nranks);
FakeHook g_on_init = nullptr;
FakeHook g_on_allreduce = nullptr;
FakeHook g_on_group_end = nullptr;
// Runs inside ncclSend (kind 0), ncclRecv (1) and ncclAlltoAll (2, peer -1), where NCCL 2.28
// emits the profiler's P2pApi events (src/enqueue.cc, p2pTaskAppend).
using P2pHook = void (*)(int kind, int peer);
P2pHook g_on_p2p = nullptr;
void* g_hook_arg = nullptr;
// Runs inside every creation call (init, split, shrink) before it returns: where real NCCL blocks
// until every member has joined.
FakeHook g_on_create = nullptr;
void* g_create_arg = nullptr;

void Creating(int rank, int nranks) {
  if (g_on_create != nullptr) g_on_create(g_create_arg, rank, nranks);
}

// A non-blocking creation (config->blocking == 0) returns ncclInProgress and completes when the
// test says so (fakenccl_set_async_error), as NCCL's does in the background.
bool NonBlocking(const ncclConfig_t* config) {
  return config != nullptr && config->blocking == 0;
}

ncclResult_t Created(ncclComm_t* comm, const ncclConfig_t* config) {
  if (!NonBlocking(config)) return ncclSuccess;
  reinterpret_cast<FakeComm*>(*comm)->async_error = ncclInProgress;
  return ncclInProgress;
}

// The errno every fake call leaves behind (a value no libc call on the way would produce).
constexpr int kFakeErrno = 4242;

ncclResult_t Done(ncclResult_t r) {
  errno = kFakeErrno;
  return r;
}

ncclComm_t NewComm(int rank, int nranks, int device) {
  return reinterpret_cast<ncclComm_t>(new FakeComm{rank, nranks, device, ncclSuccess});
}

FakeComm* F(ncclComm_t comm) {
  return reinterpret_cast<FakeComm*>(comm);
}

ncclResult_t OnComm(ncclComm_t comm) {
  return Done(comm != nullptr ? ncclSuccess : ncclInvalidArgument);
}

}  // namespace

extern "C" {

// Test hook: runs on_init inside every ncclCommInitRank* and on_allreduce inside ncclAllReduce
// (nullptr: nothing), with arg and the communicator's rank and size.
__attribute__((visibility("default"))) void fakenccl_set_hooks(FakeHook on_init,
                                                               FakeHook on_allreduce, void* arg) {
  g_on_init = on_init;
  g_on_allreduce = on_allreduce;
  g_hook_arg = arg;
}

// Test hook: runs on_p2p(kind, peer) inside ncclSend (0), ncclRecv (1), ncclAlltoAll (2, peer
// -1); nullptr: nothing.
__attribute__((visibility("default"))) void fakenccl_set_p2p_hook(P2pHook on_p2p) {
  g_on_p2p = on_p2p;
}

// Test hook: runs on_group_end(arg, 0, 0) inside the outermost ncclGroupEnd (where NCCL creates
// the communicators of a group); nullptr: nothing.
__attribute__((visibility("default"))) void fakenccl_set_group_end_hook(FakeHook on_group_end) {
  g_on_group_end = on_group_end;
}

// Test hook: runs on_create(arg, rank, size) inside every ncclCommInitRank*, ncclCommSplit and
// ncclCommShrink, where real NCCL waits for the other members (nullptr: nothing).
__attribute__((visibility("default"))) void fakenccl_set_create_hook(FakeHook on_create,
                                                                     void* arg) {
  g_on_create = on_create;
  g_create_arg = arg;
}

// Test hook: makes ncclCommGetAsyncError report err for comm.
__attribute__((visibility("default"))) void fakenccl_set_async_error(ncclComm_t comm,
                                                                     ncclResult_t err) {
  F(comm)->async_error = err;
}

ncclResult_t pncclGetVersion(int* version) {
  *version = 22809;
  return Done(ncclSuccess);
}
const char* pncclGetErrorString(ncclResult_t result) {
  static const char* kNames[] = {"fake success",  "fake cuda",  "fake system", "fake internal",
                                 "fake argument", "fake usage", "fake remote", "fake progress"};
  return result >= 0 && result < ncclNumResults ? kNames[result] : "fake unknown";
}
const char* pncclGetLastError(ncclComm_t) {
  return "fake last error";
}
ncclResult_t pncclGetUniqueId(ncclUniqueId* id) {
  std::memset(id, g_next_id++, sizeof *id);
  return Done(ncclSuccess);
}
ncclResult_t pncclCommInitRank(ncclComm_t* comm, int nranks, ncclUniqueId, int rank) {
  if (rank < 0 || rank >= nranks) return Done(ncclInvalidArgument);
  if (g_on_init != nullptr) g_on_init(g_hook_arg, rank, nranks);
  Creating(rank, nranks);
  *comm = NewComm(rank, nranks, 0);
  return Done(ncclSuccess);
}
ncclResult_t pncclCommInitRankConfig(ncclComm_t* comm, int nranks, ncclUniqueId id, int rank,
                                     ncclConfig_t* config) {
  const ncclResult_t r = pncclCommInitRank(comm, nranks, id, rank);
  return r == ncclSuccess ? Done(Created(comm, config)) : r;
}
ncclResult_t pncclCommInitRankScalable(ncclComm_t* comm, int nranks, int rank, int, ncclUniqueId*,
                                       ncclConfig_t* config) {
  Creating(rank, nranks);
  *comm = NewComm(rank, nranks, 0);
  return Done(Created(comm, config));
}
ncclResult_t pncclCommInitAll(ncclComm_t* comms, int ndev, const int*) {
  for (int i = 0; i < ndev; ++i) comms[i] = NewComm(i, ndev, i);
  return Done(ncclSuccess);
}
ncclResult_t pncclCommSplit(ncclComm_t comm, int color, int key, ncclComm_t* newcomm,
                            ncclConfig_t* config) {
  Creating(key, F(comm)->nranks);
  if (color == NCCL_SPLIT_NOCOLOR) {
    *newcomm = nullptr;
    return Done(ncclSuccess);
  }
  *newcomm = NewComm(key, F(comm)->nranks, F(comm)->device);
  return Done(Created(newcomm, config));
}
ncclResult_t pncclCommShrink(ncclComm_t comm, int*, int count, ncclComm_t* newcomm,
                             ncclConfig_t* config, int) {
  Creating(F(comm)->rank, F(comm)->nranks - count);
  *newcomm = NewComm(F(comm)->rank, F(comm)->nranks - count, F(comm)->device);
  return Done(Created(newcomm, config));
}
ncclResult_t pncclCommFinalize(ncclComm_t comm) {
  return OnComm(comm);
}
ncclResult_t pncclCommDestroy(ncclComm_t comm) {
  delete F(comm);
  return Done(ncclSuccess);
}
ncclResult_t pncclCommAbort(ncclComm_t comm) {
  return pncclCommDestroy(comm);
}
ncclResult_t pncclCommRevoke(ncclComm_t comm, int) {
  return OnComm(comm);
}
ncclResult_t pncclCommGetAsyncError(ncclComm_t comm, ncclResult_t* err) {
  if (comm == nullptr) return Done(ncclInvalidArgument);
  *err = F(comm)->async_error;
  return Done(ncclSuccess);
}
ncclResult_t pncclCommCount(const ncclComm_t comm, int* count) {
  if (comm == nullptr) return Done(ncclInvalidArgument);
  *count = F(comm)->nranks;
  return Done(ncclSuccess);
}
ncclResult_t pncclCommCuDevice(const ncclComm_t comm, int* device) {
  if (comm == nullptr) return Done(ncclInvalidArgument);
  *device = F(comm)->device;
  return Done(ncclSuccess);
}
ncclResult_t pncclCommUserRank(const ncclComm_t comm, int* rank) {
  if (comm == nullptr) return Done(ncclInvalidArgument);
  *rank = F(comm)->rank;
  return Done(ncclSuccess);
}
ncclResult_t pncclCommRegister(const ncclComm_t comm, void* buff, size_t, void** handle) {
  *handle = buff;
  return OnComm(comm);
}
ncclResult_t pncclCommDeregister(const ncclComm_t comm, void*) {
  return OnComm(comm);
}
ncclResult_t pncclCommWindowRegister(ncclComm_t comm, void*, size_t, ncclWindow_t* win, int) {
  *win = nullptr;
  return OnComm(comm);
}
ncclResult_t pncclCommWindowDeregister(ncclComm_t comm, ncclWindow_t) {
  return OnComm(comm);
}
ncclResult_t pncclMemAlloc(void** ptr, size_t size) {
  *ptr = std::malloc(size);
  return Done(ncclSuccess);
}
ncclResult_t pncclMemFree(void* ptr) {
  std::free(ptr);
  return Done(ncclSuccess);
}
ncclResult_t pncclRedOpCreatePreMulSum(ncclRedOp_t* op, void*, ncclDataType_t,
                                       ncclScalarResidence_t, ncclComm_t comm) {
  *op = static_cast<ncclRedOp_t>(ncclNumOps);
  return OnComm(comm);
}
ncclResult_t pncclRedOpDestroy(ncclRedOp_t, ncclComm_t comm) {
  return OnComm(comm);
}
ncclResult_t pncclReduce(const void*, void*, size_t, ncclDataType_t, ncclRedOp_t, int,
                         ncclComm_t comm, cudaStream_t) {
  return OnComm(comm);
}
ncclResult_t pncclBcast(void*, size_t, ncclDataType_t, int, ncclComm_t comm, cudaStream_t) {
  return OnComm(comm);
}
ncclResult_t pncclBroadcast(const void*, void*, size_t, ncclDataType_t, int, ncclComm_t comm,
                            cudaStream_t) {
  return OnComm(comm);
}
ncclResult_t pncclAllReduce(const void*, void*, size_t, ncclDataType_t, ncclRedOp_t,
                            ncclComm_t comm, cudaStream_t) {
  if (comm != nullptr && g_on_allreduce != nullptr) {
    g_on_allreduce(g_hook_arg, F(comm)->rank, F(comm)->nranks);
  }
  return OnComm(comm);
}
ncclResult_t pncclReduceScatter(const void*, void*, size_t, ncclDataType_t, ncclRedOp_t,
                                ncclComm_t comm, cudaStream_t) {
  return OnComm(comm);
}
ncclResult_t pncclAllGather(const void*, void*, size_t, ncclDataType_t, ncclComm_t comm,
                            cudaStream_t) {
  return OnComm(comm);
}
ncclResult_t pncclAlltoAll(const void*, void*, size_t, ncclDataType_t, ncclComm_t comm,
                           cudaStream_t) {
  if (comm != nullptr && g_on_p2p != nullptr) g_on_p2p(2, -1);
  return OnComm(comm);
}
ncclResult_t pncclGather(const void*, void*, size_t, ncclDataType_t, int, ncclComm_t comm,
                         cudaStream_t) {
  return OnComm(comm);
}
ncclResult_t pncclScatter(const void*, void*, size_t, ncclDataType_t, int, ncclComm_t comm,
                          cudaStream_t) {
  return OnComm(comm);
}
ncclResult_t pncclSend(const void*, size_t, ncclDataType_t, int peer, ncclComm_t comm,
                       cudaStream_t) {
  if (comm != nullptr && g_on_p2p != nullptr) g_on_p2p(0, peer);
  return OnComm(comm);
}
ncclResult_t pncclRecv(void*, size_t, ncclDataType_t, int peer, ncclComm_t comm, cudaStream_t) {
  if (comm != nullptr && g_on_p2p != nullptr) g_on_p2p(1, peer);
  return OnComm(comm);
}
ncclResult_t pncclGroupStart() {
  ++g_group_depth;
  return Done(ncclSuccess);
}
ncclResult_t pncclGroupEnd() {
  if (g_group_depth == 0) return Done(ncclInvalidUsage);
  if (--g_group_depth == 0 && g_on_group_end != nullptr) g_on_group_end(g_hook_arg, 0, 0);
  return Done(ncclSuccess);
}
ncclResult_t pncclGroupSimulateEnd(ncclSimInfo_t* info) {
  if (info != nullptr) info->estimatedTime = 1.0f;
  return pncclGroupEnd();
}

}  // extern "C"

// The public names are aliases, as in NCCL's PROFAPI builds.
#define FAKE_ALIAS(name) \
  extern "C" __attribute__((alias("pnccl" #name))) decltype(pnccl##name) nccl##name;
FAKE_ALIAS(GetVersion)
FAKE_ALIAS(GetErrorString)
FAKE_ALIAS(GetLastError)
FAKE_ALIAS(GetUniqueId)
FAKE_ALIAS(CommInitRank)
FAKE_ALIAS(CommInitRankConfig)
FAKE_ALIAS(CommInitRankScalable)
FAKE_ALIAS(CommInitAll)
FAKE_ALIAS(CommSplit)
FAKE_ALIAS(CommShrink)
FAKE_ALIAS(CommFinalize)
FAKE_ALIAS(CommDestroy)
FAKE_ALIAS(CommAbort)
FAKE_ALIAS(CommRevoke)
FAKE_ALIAS(CommGetAsyncError)
FAKE_ALIAS(CommCount)
FAKE_ALIAS(CommCuDevice)
FAKE_ALIAS(CommUserRank)
FAKE_ALIAS(CommRegister)
FAKE_ALIAS(CommDeregister)
FAKE_ALIAS(CommWindowRegister)
FAKE_ALIAS(CommWindowDeregister)
FAKE_ALIAS(MemAlloc)
FAKE_ALIAS(MemFree)
FAKE_ALIAS(RedOpCreatePreMulSum)
FAKE_ALIAS(RedOpDestroy)
FAKE_ALIAS(Reduce)
FAKE_ALIAS(Bcast)
FAKE_ALIAS(Broadcast)
FAKE_ALIAS(AllReduce)
FAKE_ALIAS(ReduceScatter)
FAKE_ALIAS(AllGather)
FAKE_ALIAS(AlltoAll)
FAKE_ALIAS(Gather)
FAKE_ALIAS(Scatter)
FAKE_ALIAS(Send)
FAKE_ALIAS(Recv)
FAKE_ALIAS(GroupStart)
FAKE_ALIAS(GroupEnd)
FAKE_ALIAS(GroupSimulateEnd)
