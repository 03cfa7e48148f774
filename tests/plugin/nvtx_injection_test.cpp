// libncclscope.so loaded by NVTX itself (NVTX_INJECTION64_PATH), as in a job: this program's own
// NVTX instance and the real libnccl.so.2 (2.28.9) attach to it, and it forwards every call to
// another tool (a fake of Nsight Systems' injection, NCCLSCOPE_NVTX_FORWARD). Both variables are
// set in main before the first NVTX call, since NVTX reads them once per instance.
#include <dlfcn.h>
#include <gtest/gtest.h>
#include <nvtx3/nvToolsExt.h>
#include <unistd.h>

#include <cstdlib>
#include <string>

namespace {

using NcclRanges = unsigned long long (*)(char*, size_t);
using FakeCounts = void (*)(int*, const char**);

template <typename F>
F Symbol(const char* library, const char* name) {
  void* h = dlopen(library, RTLD_NOW | RTLD_NOLOAD);
  return h != nullptr ? reinterpret_cast<F>(dlsym(h, name)) : nullptr;
}

struct Counts {
  int inits, pushes, pops, domain_pushes, marks;
};
Counts Fake() {
  Counts c{};
  const char* last = nullptr;
  auto f = Symbol<FakeCounts>(FAKE_NVTX_TOOL, "fake_nvtx_counts");
  if (f != nullptr) f(&c.inits, &last);
  return c;
}

std::string LastNcclRange(unsigned long long* count) {
  auto f = Symbol<NcclRanges>(PROBE_LIBRARY, "ncclscopeNvtxNcclRanges");
  if (f == nullptr) return "(probe not loaded)";
  char buf[64];
  *count = f(buf, sizeof(buf));
  return buf;
}

TEST(NvtxInjection, ForwardsToTheOtherToolAndSeesNcclDomain) {
  const int level = nvtxRangePushA("step 1");  // attaches this program's NVTX instance
  ASSERT_NE(Symbol<NcclRanges>(PROBE_LIBRARY, "ncclscopeNvtxNcclRanges"), nullptr)
      << "NVTX did not load " << PROBE_LIBRARY;
  EXPECT_EQ(level, 100) << "the forwarded tool's return value reaches the program";
  nvtxRangePop();
  const Counts c = Fake();
  EXPECT_GE(c.inits, 1);
  EXPECT_EQ(c.pushes, 1);
  EXPECT_EQ(c.pops, 1);

  // A domain named "NCCL" is NCCL's own: counted apart, never on the program's stack.
  nvtxDomainHandle_t nccl = nvtxDomainCreateA("NCCL");
  nvtxEventAttributes_t a{};
  a.version = NVTX_VERSION;
  a.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
  a.messageType = NVTX_MESSAGE_TYPE_REGISTERED;
  a.message.registered = nvtxDomainRegisterStringA(nccl, "ncclFakeCall");
  nvtxDomainRangePushEx(nccl, &a);
  nvtxDomainRangePop(nccl);
  unsigned long long seen = 0;
  EXPECT_EQ(LastNcclRange(&seen), "ncclFakeCall");  // registered through the tool's handle
  EXPECT_GE(seen, 1u);
  EXPECT_EQ(Fake().domain_pushes, c.domain_pushes + 1);
}

// NCCL 2.28.9 pushes a range named after the API call in its "NCCL" domain (src/include/nvtx.h,
// NVTX3_RANGE; src/init.cc ncclCommInitRank) before it asks CUDA for the device, so the range is
// seen even here, where the call then fails for lack of a GPU.
TEST(NvtxInjection, RealNcclRangesReachTheInjection) {
  const char* nccl_path = "/usr/local/cuda/lib/libnccl.so.2";
  if (access(nccl_path, R_OK) != 0) GTEST_SKIP() << nccl_path << " is absent";
  void* nccl = dlopen(nccl_path, RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(nccl, nullptr) << dlerror();
  using InitRank = int (*)(void**, int, char[128], int);
  auto init = reinterpret_cast<InitRank>(dlsym(nccl, "ncclCommInitRank"));
  ASSERT_NE(init, nullptr);
  unsigned long long before = 0;
  LastNcclRange(&before);
  const int fake_before = Fake().domain_pushes;
  char id[128] = {};
  void* comm = nullptr;
  EXPECT_NE(init(&comm, 1, id, 0), 0) << "no GPU here: the call fails after its range began";
  unsigned long long after = 0;
  EXPECT_EQ(LastNcclRange(&after), "ncclCommInitRank");
  EXPECT_EQ(after, before + 1);
  EXPECT_EQ(Fake().domain_pushes, fake_before + 1) << "the other tool sees NCCL's range too";
}

}  // namespace

int main(int argc, char** argv) {
  setenv("NVTX_INJECTION64_PATH", PROBE_LIBRARY, 1);
  setenv("NCCLSCOPE_NVTX_FORWARD", FAKE_NVTX_TOOL, 1);
  setenv("NCCL_DEBUG", "NONE", 0);
  ::testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
