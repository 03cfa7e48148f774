// NCCL's own NVTX payloads through libncclscope.so as the NVTX injection (NVTX_INJECTION64_PATH),
// from the real libnccl.so.2 (2.28.9) and from this program's NVTX instance. Built twice: alone
// (ncclscope serves the payload extension itself) and with FAKE_TOOL forwarded to
// (NCCLSCOPE_NVTX_FORWARD), a tool that serves the extension too and, at each NCCL push, reads
// ncclscope's current call from inside the push as a profiler event inside the call would.
//
// Why the real library's payloads can be seen without a GPU: NCCL 2.28.9 pushes a collective's
// range first thing in the API function, before the communicator is checked (src/collectives.cc,
// e.g. ncclAllReduce: NVTX3_FUNC_WITH_PARAMS with `comm ? comm->commHash : 0`, then
// ncclEnqueueCheck, whose CommCheck rejects a null comm), and registers the call's schema just
// before its first push (src/include/nvtx.h, the static payload_schema in NVTX3_FUNC_WITH_PARAMS).
// So a call with a null communicator pushes a full payload and fails.
#include <dlfcn.h>
#include <gtest/gtest.h>
#include <nccl.h>
#include <nvtx3/nvToolsExt.h>
#include <nvtx3/nvToolsExtPayload.h>  // with its implementation: this program's own instance
#include <unistd.h>

#include <cstdlib>

#include "tests/plugin/nccl_nvtx_payloads.h"

namespace {

using nccl_nvtx::CommBytesInt;
using nccl_nvtx::CommBytesOp;
using nccl_nvtx::Push;
namespace sid = nccl_nvtx;
using Payloads = int (*)(unsigned long long*, long long*);

template <typename F>
F Symbol(const char* library, const char* name) {
  void* h = dlopen(library, RTLD_NOW | RTLD_NOLOAD);
  return h != nullptr ? reinterpret_cast<F>(dlsym(h, name)) : nullptr;
}

template <typename F>
F Load(void* library, const char* name) {
  return reinterpret_cast<F>(dlsym(library, name));
}

struct Counts {
  unsigned long long decoded, refused, schemas, differ;
};
// ncclscope's counters, and whether the calling thread is inside a decoded NCCL call (*call).
Counts Probe(long long call[6] = nullptr, bool* has_call = nullptr) {
  Counts c{};
  unsigned long long out[4] = {};
  long long scratch[6] = {};
  auto f = Symbol<Payloads>(PROBE_LIBRARY, "ncclscopeNvtxNcclPayloads");
  EXPECT_NE(f, nullptr) << "NVTX did not load " << PROBE_LIBRARY;
  if (f == nullptr) return c;
  const int has = f(out, call != nullptr ? call : scratch);
  if (has_call != nullptr) *has_call = has != 0;
  return {out[0], out[1], out[2], out[3]};
}

#ifdef FAKE_TOOL
struct ToolCounts {
  int pushes, registers, pop_payloads, seen;
};
ToolCounts Tool() {
  ToolCounts t{};
  int out[3] = {};
  auto f = Symbol<int (*)(int*)>(FAKE_TOOL, "fake_nvtx_payload_counts");
  EXPECT_NE(f, nullptr);
  if (f == nullptr) return t;
  t.seen = f(out);
  t.pushes = out[0];
  t.registers = out[1];
  t.pop_payloads = out[2];
  return t;
}
const long long* ToolSeen(int i) {
  auto f = Symbol<const long long* (*)(int)>(FAKE_TOOL, "fake_nvtx_payload_seen");
  return f != nullptr ? f(i) : nullptr;
}
#endif

constexpr long long kOpAllReduce = 1, kOpRecv = 21;  // trace::OpType
#ifdef FAKE_TOOL
constexpr long long kOpBroadcast = 2, kOpReduce = 3, kOpAllGather = 4, kOpReduceScatter = 5,
                    kOpAlltoAll = 6, kOpGather = 7, kOpScatter = 8, kOpSend = 20;
#endif

// Runs first (gtest keeps declaration order): the later test registers a differing schema in an
// "NCCL" domain on purpose, which refuses that id for the rest of the process.
TEST(NcclPayloadInjection, RealNcclCallsAreDecodedAndTheirSchemasMatch2289) {
  const char* path = "/usr/local/cuda/lib/libnccl.so.2";
  if (access(path, R_OK) != 0) GTEST_SKIP() << path << " is absent";
  void* nccl = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(nccl, nullptr) << dlerror();
  auto all_reduce = Load<decltype(&ncclAllReduce)>(nccl, "ncclAllReduce");
  auto reduce = Load<decltype(&ncclReduce)>(nccl, "ncclReduce");
  auto reduce_scatter = Load<decltype(&ncclReduceScatter)>(nccl, "ncclReduceScatter");
  auto broadcast = Load<decltype(&ncclBroadcast)>(nccl, "ncclBroadcast");
  auto all_gather = Load<decltype(&ncclAllGather)>(nccl, "ncclAllGather");
  auto alltoall = Load<decltype(&ncclAlltoAll)>(nccl, "ncclAlltoAll");
  auto gather = Load<decltype(&ncclGather)>(nccl, "ncclGather");
  auto scatter = Load<decltype(&ncclScatter)>(nccl, "ncclScatter");
  auto send = Load<decltype(&ncclSend)>(nccl, "ncclSend");
  auto recv = Load<decltype(&ncclRecv)>(nccl, "ncclRecv");
  ASSERT_TRUE(all_reduce && reduce && reduce_scatter && broadcast && all_gather && alltoall &&
              gather && scatter && send && recv);
  const Counts before = Probe();
#ifdef FAKE_TOOL
  const ToolCounts tool_before = Tool();
#endif
  char buf[64] = {};
  // A null communicator: each call pushes its range, then fails in ncclEnqueueCheck.
  EXPECT_NE(all_reduce(buf, buf, 256, ncclFloat32, ncclMax, nullptr, nullptr), ncclSuccess);
  EXPECT_NE(reduce(buf, buf, 10, ncclFloat64, ncclAvg, 3, nullptr, nullptr), ncclSuccess);
  EXPECT_NE(reduce_scatter(buf, buf, 6, ncclInt32, ncclProd, nullptr, nullptr), ncclSuccess);
  EXPECT_NE(broadcast(buf, buf, 7, ncclBfloat16, 1, nullptr, nullptr), ncclSuccess);
  EXPECT_NE(all_gather(buf, buf, 5, ncclInt8, nullptr, nullptr), ncclSuccess);
  EXPECT_NE(alltoall(buf, buf, 9, ncclUint64, nullptr, nullptr), ncclSuccess);
  EXPECT_NE(gather(buf, buf, 3, ncclFloat16, 2, nullptr, nullptr), ncclSuccess);
  EXPECT_NE(scatter(buf, buf, 4, ncclFloat32, 5, nullptr, nullptr), ncclSuccess);
  EXPECT_NE(send(buf, 11, ncclInt8, 6, nullptr, nullptr), ncclSuccess);
  EXPECT_NE(recv(buf, 12, ncclInt32, 7, nullptr, nullptr), ncclSuccess);
  const Counts after = Probe();
  EXPECT_EQ(after.decoded - before.decoded, 10u) << "one decoded call per API call";
  EXPECT_EQ(after.refused, before.refused);
  // Every call's schema registration reached ncclscope and matched 2.28.9's layout as the
  // decoder knows it: the layouts are checked against the real library, not only our reading.
  EXPECT_EQ(after.schemas - before.schemas, 10u);
  EXPECT_EQ(after.differ, before.differ);
  bool inside = true;
  Probe(nullptr, &inside);
  EXPECT_FALSE(inside) << "every range was popped when its call returned";
#ifdef FAKE_TOOL
  const ToolCounts tool = Tool();
  EXPECT_EQ(tool.registers - tool_before.registers, 10) << "the tool gets NCCL's schemas too";
  ASSERT_EQ(tool.seen - tool_before.seen, 10) << "one NCCL push per call reached the tool";
  // What the tool read from ncclscope inside each push: op, commHash, bytes, root, peer, redop.
  const long long want[10][6] = {
      {kOpAllReduce, 0, 256LL * 4, -1, -1, ncclMax},
      {kOpReduce, 0, 10LL * 8, 3, -1, ncclAvg},
      {kOpReduceScatter, 0, 6LL * 4, -1, -1, ncclProd},
      {kOpBroadcast, 0, 7LL * 2, 1, -1, -1},
      {kOpAllGather, 0, 5, -1, -1, -1},
      {kOpAlltoAll, 0, 9LL * 8, -1, -1, -1},
      {kOpGather, 0, 3LL * 2, 2, -1, -1},
      {kOpScatter, 0, 4LL * 4, 5, -1, -1},
      {kOpSend, 0, 11, -1, 6, -1},
      {kOpRecv, 0, 12LL * 4, -1, 7, -1},
  };
  for (int i = 0; i < 10; ++i) {
    const long long* seen = ToolSeen(tool_before.seen + i);
    ASSERT_NE(seen, nullptr);
    EXPECT_EQ(seen[0], 1) << "call " << i << ": no current call inside NCCL's push";
    for (int f = 0; f < 6; ++f)
      EXPECT_EQ(seen[1 + f], want[i][f]) << "call " << i << " field " << f;
  }
#endif
}

TEST(NcclPayloadInjection, ProgramBuiltRangesNestPopAndRefuse) {
  nvtxDomainHandle_t nccl = nvtxDomainCreateA("NCCL");
  nvtxDomainHandle_t app = nvtxDomainCreateA("app");
  const Counts c0 = Probe();
  nccl_nvtx::Schema schema;
  nccl_nvtx::MakeSchema(sid::kAllReduce, &schema);
  nvtxPayloadSchemaRegister(nccl, &schema.attr);
  const Counts c1 = Probe();
  EXPECT_EQ(c1.schemas - c0.schemas, 1u);
  EXPECT_EQ(c1.differ, c0.differ);

  long long call[6] = {};
  bool inside = false;
  Push<CommBytesOp> all_reduce(sid::kAllReduce, {0xc0ffee, 2048, ncclMin});
  nvtxDomainRangePushEx(nccl, &all_reduce.attr);
  Probe(call, &inside);
  ASSERT_TRUE(inside);
  EXPECT_EQ(call[0], kOpAllReduce);
  EXPECT_EQ(call[1], 0xc0ffee);
  EXPECT_EQ(call[2], 2048);
  EXPECT_EQ(call[5], ncclMin);
  Push<CommBytesInt> recv(sid::kRecv, {0xc0ffee, 16, 4});
  nvtxDomainRangePushEx(nccl, &recv.attr);
  Probe(call, &inside);
  ASSERT_TRUE(inside);
  EXPECT_EQ(call[0], kOpRecv);
  EXPECT_EQ(call[4], 4);
  nvtxDomainRangePop(nccl);
  Probe(call, &inside);
  ASSERT_TRUE(inside);
  EXPECT_EQ(call[0], kOpAllReduce);
  nvtxDomainRangePop(nccl);
  Probe(call, &inside);
  EXPECT_FALSE(inside);

  // A creation call's shape: a range without payload at push, ended by nvtxRangePopPayload
  // (src/include/nvtx.h, ncclOptionalNvtxPayloadRange) once the call succeeded.
  nvtxEventAttributes_t plain{};
  plain.version = NVTX_VERSION;
  plain.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
  nccl_nvtx::CommInitRank created{0xc0ffee, 8, 1, 0};
  const nvtxPayloadData_t created_data{sid::kBase + sid::kCommInitRank, sizeof(created), &created};
#ifdef FAKE_TOOL
  const int pops_before = Tool().pop_payloads;
  nvtxDomainRangePushEx(nccl, &plain);
  EXPECT_EQ(nvtxRangePopPayload(nccl, &created_data, 1), 300) << "the tool's own return value";
  EXPECT_EQ(Tool().pop_payloads, pops_before + 1) << "the tool still gets the pop";
#else
  EXPECT_EQ(nvtxDomainRangePushEx(nccl, &plain), 0);
  EXPECT_EQ(nvtxRangePopPayload(nccl, &created_data, 1), 0) << "ncclscope ended the range";
  EXPECT_EQ(nvtxDomainRangePushEx(nccl, &plain), 0) << "the NCCL depth is back to 0";
  nvtxDomainRangePop(nccl);
#endif

  // Refused: an id 2.28.9 does not have, a size it does not use, an id whose registration in the
  // NCCL domain differed from 2.28.9's (Gather with its root moved).
  Push<CommBytesOp> unknown(25, {1, 8, 0});
  Push<nccl_nvtx::CommBytes> short_reduce(sid::kAllReduce, {1, 8});
  nccl_nvtx::Schema moved;
  nccl_nvtx::MakeSchema(sid::kGather, &moved);
  moved.entries[2].offset = 20;
  nvtxPayloadSchemaRegister(nccl, &moved.attr);
  Push<CommBytesInt> gather(sid::kGather, {1, 8, 0});
  const Counts c2 = Probe();
  EXPECT_EQ(c2.differ - c1.differ, 1u);
  for (const nvtxEventAttributes_t* a : {&unknown.attr, &short_reduce.attr, &gather.attr}) {
    nvtxDomainRangePushEx(nccl, a);
    Probe(call, &inside);
    EXPECT_FALSE(inside);
    nvtxDomainRangePop(nccl);
  }
  // Another domain's payload is the program's own: neither read nor refused.
  nvtxDomainRangePushEx(app, &all_reduce.attr);
  nvtxDomainRangePop(app);
  const Counts c3 = Probe();
  EXPECT_EQ(c3.refused - c2.refused, 3u);
  EXPECT_EQ(c3.decoded - c2.decoded, 0u);
}

}  // namespace

int main(int argc, char** argv) {
  setenv("NVTX_INJECTION64_PATH", PROBE_LIBRARY, 1);
#ifdef FAKE_TOOL
  setenv("NCCLSCOPE_NVTX_FORWARD", FAKE_TOOL, 1);
#else
  unsetenv("NCCLSCOPE_NVTX_FORWARD");
#endif
  unsetenv("NCCL_NVTX_DISABLE");
  setenv("NCCL_DEBUG", "NONE", 0);
  nvtxInitialize(nullptr);  // this program's instance loads the injection now, not mid-test
  ::testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
