// The profiler-plugin ABI, checked as far as a machine without a GPU can: our structs have the
// documented layout (NCCL 2.28.9 ships no header to compile against), the emulator's separately
// written NCCL-side definitions agree with them, libncclscope.so exports the tables, and the
// installed libnccl.so.2 looks up a table version we export.
#include <dlfcn.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstddef>
#include <cstring>
#include <string>

#include "plugin/core/profiler_abi.h"
#include "sim/emulator/profiler_abi.h"

namespace ncclscope::plugin {
namespace {

namespace abi = prof_abi;
namespace sim = ncclsim::profabi;

TEST(ProfilerAbi, V5DescriptorHasTheDocumentedLayout) {
  EXPECT_EQ(offsetof(abi::EventDescrV5, type), 0u);
  EXPECT_EQ(sizeof(abi::EventDescrV5::type), 8u);
  EXPECT_EQ(offsetof(abi::EventDescrV5, parentObj), 8u);
  EXPECT_EQ(offsetof(abi::EventDescrV5, rank), 16u);
  EXPECT_EQ(offsetof(abi::EventDescrV5, coll), 24u);
  EXPECT_EQ(offsetof(abi::CollV5, seqNumber), 0u);
  EXPECT_EQ(offsetof(abi::CollV5, func), 8u);
  EXPECT_EQ(offsetof(abi::CollV5, count), 32u);
  EXPECT_EQ(offsetof(abi::CollV5, root), 40u);
  EXPECT_EQ(offsetof(abi::CollV5, datatype), 48u);
  EXPECT_EQ(offsetof(abi::CollV5, nChannels), 56u);
  EXPECT_EQ(offsetof(abi::CollV5, nWarps), 57u);
  EXPECT_EQ(offsetof(abi::CollV5, algo), 64u);
  EXPECT_EQ(offsetof(abi::CollV5, proto), 72u);
  EXPECT_EQ(offsetof(abi::CollV5, parentGroup), 80u);
  EXPECT_EQ(offsetof(abi::CollApiV5, root), 24u);
  EXPECT_EQ(offsetof(abi::CollApiV5, stream), 32u);
  EXPECT_EQ(offsetof(abi::KernelChV4, pTimer), 8u);
  EXPECT_EQ(sizeof(abi::EventDescrV5), 24u + 88u);  // the Coll member is the largest
}

TEST(ProfilerAbi, V4DescriptorDiffersOnlyInTheTypeWidth) {
  EXPECT_EQ(sizeof(abi::EventDescrV4::type), 1u);
  EXPECT_EQ(offsetof(abi::EventDescrV4, parentObj), 8u);
  EXPECT_EQ(offsetof(abi::EventDescrV4, coll), offsetof(abi::EventDescrV5, coll));
  EXPECT_EQ(offsetof(abi::EventDescrV4, kernelCh), offsetof(abi::EventDescrV5, kernelCh));
  EXPECT_EQ(sizeof(abi::EventDescrV4), 24u + 80u);
  EXPECT_EQ(sizeof(abi::StateArgsV4), 8u);
}

TEST(ProfilerAbi, TablesAreSixPointersInNcclsOrder) {
  EXPECT_EQ(sizeof(abi::TableV5), 6 * sizeof(void*));
  EXPECT_EQ(offsetof(abi::TableV5, init), 8u);
  EXPECT_EQ(offsetof(abi::TableV5, startEvent), 16u);
  EXPECT_EQ(offsetof(abi::TableV5, finalize), 40u);
  EXPECT_EQ(sizeof(abi::TableV4), 6 * sizeof(void*));
}

TEST(ProfilerAbi, EmulatorsIndependentDefinitionAgrees) {
  EXPECT_EQ(sizeof(sim::Descr5), sizeof(abi::EventDescrV5));
  EXPECT_EQ(sizeof(sim::Descr4), sizeof(abi::EventDescrV4));
  EXPECT_EQ(offsetof(sim::Descr5, coll) + offsetof(sim::Coll5, seqNumber),
            offsetof(abi::EventDescrV5, coll) + offsetof(abi::CollV5, seqNumber));
  EXPECT_EQ(offsetof(sim::Descr5, collApi), offsetof(abi::EventDescrV5, collApi));
  EXPECT_EQ(offsetof(sim::Descr5, kernelCh) + offsetof(sim::KernelCh, pTimer),
            offsetof(abi::EventDescrV5, kernelCh) + offsetof(abi::KernelChV4, pTimer));
  EXPECT_EQ(offsetof(sim::Descr4, coll) + offsetof(sim::Coll4, seqNumber),
            offsetof(abi::EventDescrV4, coll) + offsetof(abi::CollV4, seqNumber));
  EXPECT_EQ(sizeof(sim::StateArgs), sizeof(abi::StateArgsV4));
  EXPECT_EQ(sizeof(sim::Table5), sizeof(abi::TableV5));
  EXPECT_EQ(sim::kEvCollApi, abi::kCollApi);
  EXPECT_EQ(sim::kEvKernelCh, abi::kKernelCh);
  EXPECT_EQ(sim::kStateKernelChStop, abi::kStateKernelChStop);
}

// The newest ncclProfiler_v<N> name a library file mentions (NCCL looks them up newest first).
int NewestTableNamed(const std::string& path) {
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return 0;
  struct stat st {};
  fstat(fd, &st);
  const auto size = static_cast<size_t>(st.st_size);
  void* bytes = mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0);
  close(fd);
  if (bytes == MAP_FAILED) return 0;
  int newest = 0;
  for (int v = 9; v >= 1 && newest == 0; --v) {
    const std::string name = "ncclProfiler_v" + std::to_string(v);
    if (memmem(bytes, size, name.c_str(), name.size() + 1) != nullptr) newest = v;
  }
  munmap(bytes, size);
  return newest;
}

TEST(ProfilerAbi, ProbeExportsEveryTableVersionItDeclares) {
  void* h = dlopen(NCCLSCOPE_PROBE_LIBRARY, RTLD_LAZY | RTLD_LOCAL);
  ASSERT_NE(h, nullptr) << dlerror();
  for (const char* name : {"ncclProfiler_v4", "ncclProfiler_v5", "ncclProfiler_v6"}) {
    const auto* t = static_cast<const abi::TableV5*>(dlsym(h, name));
    ASSERT_NE(t, nullptr) << name;
    EXPECT_STREQ(t->name, "ncclscope");
    EXPECT_NE(t->init, nullptr);
    EXPECT_NE(t->startEvent, nullptr);
    EXPECT_NE(t->stopEvent, nullptr);
    EXPECT_NE(t->recordEventState, nullptr);
    EXPECT_NE(t->finalize, nullptr);
  }
}

TEST(ProfilerAbi, InstalledNcclLooksUpATableWeExport) {
  const std::string real = NCCLSCOPE_REAL_NCCL_PATH;
  if (real.empty()) GTEST_SKIP() << "no libnccl.so.2 installed";
  const int newest = NewestTableNamed(real);
  ASSERT_GE(newest, 4) << real << " knows no profiler table we export";
  // 2.28.9 looks up v5 first; whatever it looks up first, we export it.
  void* h = dlopen(NCCLSCOPE_PROBE_LIBRARY, RTLD_LAZY | RTLD_LOCAL);
  ASSERT_NE(h, nullptr) << dlerror();
  const std::string first = "ncclProfiler_v" + std::to_string(newest);
  EXPECT_NE(dlsym(h, first.c_str()), nullptr) << first;
}

}  // namespace
}  // namespace ncclscope::plugin
