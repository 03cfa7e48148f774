// The "next" library of the interposer benchmark: pnccl* entry points that do nothing and succeed,
// so the time of an interposed call minus the time of a direct call is ncclscope's overhead alone.
// It defines only pnccl* (no nccl*), so the bench's nccl* calls can only bind to libncclscope.so,
// and the probe finds these through dlsym(RTLD_DEFAULT, "pncclAllReduce") like the real library.
#include <nccl.h>

#include <cstring>

namespace {

// Distinct, never-freed handles; 64-byte apart so per-comm state never shares a cache line.
struct alignas(64) FakeComm {
  int rank;
};
FakeComm g_comms[64];
int g_next_comm = 0;
unsigned char g_next_id = 1;
// Runs inside ncclCommInitRank, where NCCL calls the profiler plugin's init (profiler_event_bench).
void (*g_on_init)(int rank, int nranks) = nullptr;

}  // namespace

extern "C" {

ncclResult_t pncclGetVersion(int* version) {
  *version = 22809;
  return ncclSuccess;
}
const char* pncclGetErrorString(ncclResult_t) {
  return "bench fake nccl";
}
ncclResult_t pncclGetUniqueId(ncclUniqueId* id) {
  // A different id per call: the probe derives communicator ids from these bytes.
  std::memset(id, g_next_id++, sizeof *id);
  return ncclSuccess;
}
ncclResult_t pncclCommInitRank(ncclComm_t* comm, int nranks, ncclUniqueId, int rank) {
  if (g_next_comm == 64 || rank < 0 || rank >= nranks) return ncclInvalidArgument;
  g_comms[g_next_comm].rank = rank;
  *comm = reinterpret_cast<ncclComm_t>(&g_comms[g_next_comm++]);
  if (g_on_init != nullptr) g_on_init(rank, nranks);
  return ncclSuccess;
}

// Sets the hook run inside ncclCommInitRank (nullptr: none).
__attribute__((visibility("default"))) void benchfake_set_init_hook(void (*hook)(int, int)) {
  g_on_init = hook;
}
ncclResult_t pncclCommDestroy(ncclComm_t) {
  return ncclSuccess;
}
ncclResult_t pncclAllReduce(const void*, void*, size_t, ncclDataType_t, ncclRedOp_t, ncclComm_t,
                            cudaStream_t) {
  return ncclSuccess;
}
ncclResult_t pncclSend(const void*, size_t, ncclDataType_t, int, ncclComm_t, cudaStream_t) {
  return ncclSuccess;
}
ncclResult_t pncclRecv(void*, size_t, ncclDataType_t, int, ncclComm_t, cudaStream_t) {
  return ncclSuccess;
}
ncclResult_t pncclGroupStart() {
  return ncclSuccess;
}
ncclResult_t pncclGroupEnd() {
  return ncclSuccess;
}

}  // extern "C"
