// Calls NCCL entry points and prints, one line per call, what the application sees: return code,
// strings and errno. Run with and without LD_PRELOAD=libncclscope.so, the outputs must be equal.
// Linked against the real libnccl.so.2 (no GPU: communicator creation fails) or the fake one.
#include <nccl.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

namespace {

void Show(const char* what, ncclResult_t r) {
  std::printf("%-28s rc=%d errno=%d\n", what, static_cast<int>(r), errno);
}

}  // namespace

int main() {
  int version = 0;
  errno = 0;
  Show("ncclGetVersion", ncclGetVersion(&version));
  std::printf("version=%d\n", version);
  for (int r = 0; r <= static_cast<int>(ncclNumResults); ++r) {
    errno = 0;
    std::printf("ncclGetErrorString(%d)=%s errno=%d\n", r,
                ncclGetErrorString(static_cast<ncclResult_t>(r)), errno);
  }
  errno = 0;
  const char* last = ncclGetLastError(nullptr);
  std::printf("ncclGetLastError(NULL)=%s errno=%d\n", last != nullptr ? last : "(null)", errno);

  ncclUniqueId id;
  std::memset(&id, 0, sizeof id);
  errno = 0;
  Show("ncclGetUniqueId", ncclGetUniqueId(&id));
  ncclComm_t comm = nullptr;
  errno = 0;
  const ncclResult_t init = ncclCommInitRank(&comm, 1, id, 0);
  Show("ncclCommInitRank", init);

  float buf[16] = {};
  errno = 0;
  Show("ncclAllReduce(NULL comm)",
       ncclAllReduce(buf, buf, 16, ncclFloat32, ncclSum, nullptr, nullptr));
  errno = 0;
  Show("ncclSend(NULL comm)", ncclSend(buf, 16, ncclFloat32, 0, nullptr, nullptr));
  int n = -7;
  errno = 0;
  Show("ncclCommCount(NULL)", ncclCommCount(nullptr, &n));
  std::printf("count=%d\n", n);
  errno = 0;
  Show("ncclCommUserRank(NULL)", ncclCommUserRank(nullptr, &n));
  errno = 0;
  Show("ncclCommCuDevice(NULL)", ncclCommCuDevice(nullptr, &n));
  ncclResult_t async = ncclSuccess;
  errno = 0;
  Show("ncclCommGetAsyncError(NULL)", ncclCommGetAsyncError(nullptr, &async));
  errno = 0;
  Show("ncclGroupStart", ncclGroupStart());
  errno = 0;
  Show("ncclGroupEnd", ncclGroupEnd());
  errno = 0;
  Show("ncclGroupEnd (unmatched)", ncclGroupEnd());
  if (init == ncclSuccess) {
    for (int i = 0; i < 4; ++i) {
      errno = 0;
      Show("ncclAllReduce", ncclAllReduce(buf, buf, 16, ncclFloat32, ncclSum, comm, nullptr));
    }
    errno = 0;
    Show("ncclCommDestroy", ncclCommDestroy(comm));
  }
  return 0;
}
