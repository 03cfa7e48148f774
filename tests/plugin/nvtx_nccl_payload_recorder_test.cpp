// Plugin-only records take the reduction op from NCCL's own NVTX range around the call. The order
// is NCCL 2.28.9's: the API function pushes its range first (src/collectives.cc, ncclAllReduce:
// NVTX3_FUNC_WITH_PARAMS), then ncclEnqueueCheck -> taskAppend -> collTaskAppend starts and stops
// the CollApi event on the same thread (src/enqueue.cc), and the range is popped when the function
// returns; an ungrouped call's launch (v4: its Coll event) happens inside ncclEnqueueCheck's
// ncclGroupEndInternal, still inside the range.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "../trace/temp_dir.h"
#include "plugin/core/profiler_abi.h"
#include "plugin/nvtx/nvtx_nccl_payload_calls.h"
#include "tests/plugin/nccl_nvtx_payloads.h"
#include "tests/plugin/own_ring.h"
#include "trace/ring_reader.h"

extern "C" const ncclscope::plugin::prof_abi::TableV5 ncclProfiler_v5;
extern "C" const ncclscope::plugin::prof_abi::TableV4 ncclProfiler_v4;

namespace ncclscope::plugin {
namespace {

namespace abi = prof_abi;
using nccl_nvtx::CommBytesInt;
using nccl_nvtx::CommBytesOp;
using nccl_nvtx::CommBytesRootOp;
using nccl_nvtx::Push;
using trace::OpType;
namespace sid = nccl_nvtx;

ncclscope::testing::TempDir* g_dir = nullptr;
constexpr int kNcclProd = 1, kNcclMax = 2, kNcclAvg = 4;

std::vector<trace::RecordData> RecordsOf(OpType op, uint64_t comm_id) {
  return ncclscope::testing::RecordsOf(g_dir->path(), op, comm_id);
}

// One v5 communicator and an ungrouped collective as NCCL emits it, inside `range` when given
// (NcclRangePush is what the injection's NCCL-domain push calls).
struct V5 {
  void* ctx = nullptr;
  V5(uint64_t hash, const char* name) {
    int mask = 0;
    EXPECT_EQ(ncclProfiler_v5.init(&ctx, hash, &mask, name, 1, 4, 0, nullptr), ncclSuccess);
  }
  void Collective(const nvtxEventAttributes_t* range, const char* func, int root) {
    if (range != nullptr) NcclRangePush(range);
    abi::EventDescrV5 g{};
    g.type = abi::kGroupApi;
    g.groupApi.groupDepth = 1;
    void* group = nullptr;
    ncclProfiler_v5.startEvent(ctx, &group, &g);
    abi::EventDescrV5 e{};
    e.type = abi::kCollApi;
    e.parentObj = group;
    e.collApi = {func, 64, "ncclFloat32", root, nullptr, false};
    void* api = nullptr;
    ncclProfiler_v5.startEvent(ctx, &api, &e);
    if (api != nullptr) ncclProfiler_v5.stopEvent(api);
    if (group != nullptr) ncclProfiler_v5.stopEvent(group);
    if (range != nullptr) NcclRangePop();
  }
};

TEST(NcclPayloadRecorder, CollectiveRecordsTakeTheOpOfTheirNcclRange) {
  V5 n(0x5eed, "tp");
  Push<CommBytesOp> all_reduce(sid::kAllReduce, {0x5eed, 256, kNcclMax});
  n.Collective(&all_reduce.attr, "AllReduce", 0);
  Push<CommBytesRootOp> reduce(sid::kReduce, {0x5eed, 256, 3, kNcclAvg});
  n.Collective(&reduce.attr, "Reduce", 3);
  Push<CommBytesOp> reduce_scatter(sid::kReduceScatter, {0x5eed, 64, kNcclProd});
  n.Collective(&reduce_scatter.attr, "ReduceScatter", 0);

  const auto ar = RecordsOf(OpType::kAllReduce, 0x5eed);
  ASSERT_EQ(ar.size(), 1u);
  EXPECT_EQ(ar[0].redop, kNcclMax);
  const auto r = RecordsOf(OpType::kReduce, 0x5eed);
  ASSERT_EQ(r.size(), 1u);
  EXPECT_EQ(r[0].redop, kNcclAvg);
  EXPECT_EQ(r[0].peer, 3);  // the root, from the CollApi event
  const auto rs = RecordsOf(OpType::kReduceScatter, 0x5eed);
  ASSERT_EQ(rs.size(), 1u);
  EXPECT_EQ(rs[0].redop, kNcclProd);
}

TEST(NcclPayloadRecorder, NoOpWithoutAMatchingRange) {
  V5 n(0xd1ff, "dp");
  n.Collective(nullptr, "AllReduce", 0);  // NVTX not injected, or NCCL_NVTX_DISABLE=1
  Push<CommBytesOp> other_comm(sid::kAllReduce, {0x0bad, 256, kNcclMax});
  n.Collective(&other_comm.attr, "AllReduce", 0);  // another communicator's call
  Push<CommBytesInt> broadcast(sid::kBroadcast, {0xd1ff, 256, 0});
  n.Collective(&broadcast.attr, "AllReduce", 0);  // another function
  Push<nccl_nvtx::CommBytes> refused(sid::kAllReduce, {0xd1ff, 256});
  n.Collective(&refused.attr, "AllReduce", 0);  // not 2.28.9's layout
  const auto ar = RecordsOf(OpType::kAllReduce, 0xd1ff);
  ASSERT_EQ(ar.size(), 4u);
  for (const trace::RecordData& d : ar) EXPECT_EQ(d.redop, -1) << "seq " << d.seq;
}

// v4 (NCCL 2.27): the Coll event at launch, inside the call's range for an ungrouped call.
TEST(NcclPayloadRecorder, V4CollAtLaunchTakesTheOpToo) {
  void* ctx = nullptr;
  int mask = 0;
  ASSERT_EQ(ncclProfiler_v4.init(&ctx, &mask, "pp", 0x44, 1, 2, 0, nullptr), ncclSuccess);
  Push<CommBytesOp> all_reduce(sid::kAllReduce, {0x44, 64, kNcclMax});
  NcclRangePush(&all_reduce.attr);
  abi::EventDescrV4 e{};
  e.type = abi::kColl;
  e.coll.func = "AllReduce";
  e.coll.count = 16;
  e.coll.datatype = "ncclFloat32";
  e.coll.nChannels = 1;
  void* h = nullptr;
  ncclProfiler_v4.startEvent(ctx, &h, &e);
  if (h != nullptr) ncclProfiler_v4.stopEvent(h);
  NcclRangePop();
  const auto ar = RecordsOf(OpType::kAllReduce, 0x44);
  ASSERT_EQ(ar.size(), 1u);
  EXPECT_EQ(ar[0].redop, kNcclMax);
}

}  // namespace
}  // namespace ncclscope::plugin

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  ncclscope::testing::TempDir dir;
  ncclscope::plugin::g_dir = &dir;
  setenv("NCCLSCOPE_DIR", dir.path().c_str(), 1);
  setenv("NCCLSCOPE_HEARTBEAT_MS", "10", 1);
  return RUN_ALL_TESTS();
}
