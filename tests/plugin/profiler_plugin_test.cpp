// The probe's profiler-plugin tables driven as NCCL drives them: the fake libnccl calls the hooks
// below inside ncclCommInitRank (init) and ncclAllReduce (CollApi, Coll, KernelCh events), with
// the interposer in front, and the test reads back what landed in the ring.
#include <gtest/gtest.h>
#include <nccl.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <thread>
#include <vector>

#include "../trace/temp_dir.h"
#include "plugin/core/profiler_abi.h"
#include "plugin/profiler/profiler_plugin.h"
#include "tests/plugin/own_ring.h"
#include "trace/identity.h"
#include "trace/ring_reader.h"

extern "C" void fakenccl_set_hooks(void (*on_init)(void*, int, int),
                                   void (*on_allreduce)(void*, int, int), void* arg);
extern "C" void fakenccl_set_group_end_hook(void (*on_group_end)(void*, int, int));
extern "C" const ncclscope::plugin::prof_abi::TableV5 ncclProfiler_v5;
extern "C" const ncclscope::plugin::prof_abi::TableV4 ncclProfiler_v4;

namespace ncclscope::plugin {
namespace {

namespace abi = prof_abi;
using trace::OpType;

ncclscope::testing::TempDir* g_dir = nullptr;

// What NCCL would do, configurable per test.
struct FakeNccl {
  int version = 5;
  const char* name = nullptr;  // ncclConfig_t.commName as NCCL passes it to init
  int mask = 0;
  void* ctx = nullptr;
  bool init_on_other_thread = false;
  bool init_at_group_end = false;  // grouped creation: NCCL runs init inside ncclGroupEnd
  int pending_rank = -1, pending_nranks = -1;
  bool start_kernel = true;
  bool launch_later = false;  // the test emits the Coll events itself, as NCCL at a group's end
  int channels = 2;
  uint64_t nccl_seq = 0;
  void* last_coll = nullptr;
  std::vector<void*> colls;  // every Coll handle, in emission order
};
FakeNccl g_nccl;

void OnInit(void* /*arg*/, int rank, int nranks) {
  if (g_nccl.init_at_group_end) {
    g_nccl.pending_rank = rank;
    g_nccl.pending_nranks = nranks;
    return;
  }
  auto init = [&] {
    if (g_nccl.version == 5) {
      ncclProfiler_v5.init(&g_nccl.ctx, 0xc0ffee, &g_nccl.mask, g_nccl.name, 1, nranks, rank,
                           nullptr);
    } else {
      ncclProfiler_v4.init(&g_nccl.ctx, &g_nccl.mask, g_nccl.name, 0xc0ffee, 1, nranks, rank,
                           nullptr);
    }
  };
  if (g_nccl.init_on_other_thread) {
    std::thread(init).join();  // NCCL's async init thread
  } else {
    init();
  }
}

void OnGroupEnd(void* arg, int, int) {
  if (g_nccl.pending_rank < 0) return;
  g_nccl.init_at_group_end = false;
  g_nccl.init_on_other_thread = true;  // NCCL's async init thread
  OnInit(arg, g_nccl.pending_rank, g_nccl.pending_nranks);
  g_nccl.pending_rank = -1;
}

void StartKernelChannels(void* coll, int channels) {
  for (int ch = 0; ch < channels; ++ch) {
    void* h = nullptr;
    if (g_nccl.version == 5) {
      abi::EventDescrV5 k{};
      k.type = abi::kKernelCh;
      k.parentObj = coll;
      k.kernelCh = {static_cast<uint8_t>(ch), 1000u + static_cast<uint64_t>(ch)};
      ncclProfiler_v5.startEvent(g_nccl.ctx, &h, &k);
    } else {
      abi::EventDescrV4 k{};
      k.type = static_cast<uint8_t>(abi::kKernelCh);
      k.parentObj = coll;
      k.kernelCh = {static_cast<uint8_t>(ch), 1000u + static_cast<uint64_t>(ch)};
      ncclProfiler_v4.startEvent(g_nccl.ctx, &h, &k);
    }
  }
}

// CollApi (v5) around the call, Coll at launch, then one KernelCh start per channel.
void EmitCollective() {
  void* coll = nullptr;
  if (g_nccl.version == 5) {
    void* api = nullptr;
    abi::EventDescrV5 a{};
    a.type = abi::kCollApi;
    a.collApi.func = "AllReduce";
    ncclProfiler_v5.startEvent(g_nccl.ctx, &api, &a);
    abi::EventDescrV5 c{};
    c.type = abi::kColl;
    c.parentObj = api;
    c.coll.seqNumber = g_nccl.nccl_seq++;
    c.coll.func = "AllReduce";
    ncclProfiler_v5.startEvent(g_nccl.ctx, &coll, &c);
    ncclProfiler_v5.stopEvent(coll);
    ncclProfiler_v5.stopEvent(api);
  } else {
    abi::EventDescrV4 c{};
    c.type = static_cast<uint8_t>(abi::kColl);
    c.coll.seqNumber = g_nccl.nccl_seq++;
    ncclProfiler_v4.startEvent(g_nccl.ctx, &coll, &c);
  }
  g_nccl.last_coll = coll;
  g_nccl.colls.push_back(coll);
  if (g_nccl.start_kernel) StartKernelChannels(coll, g_nccl.channels);
}

void OnAllReduce(void* /*arg*/, int /*rank*/, int /*nranks*/) {
  if (!g_nccl.launch_later) EmitCollective();
}

// A v4 Coll event as NCCL 2.28.9's ncclProfilerStartTaskEvents fills it from the task
// (src/plugin/profiler.cc), then its kernel's channels.
void LaunchV4Coll(const char* func, const void* send, void* recv, size_t count,
                  const char* datatype) {
  abi::EventDescrV4 c{};
  c.type = static_cast<uint8_t>(abi::kColl);
  c.coll.seqNumber = g_nccl.nccl_seq++;
  c.coll.func = func;
  c.coll.sendBuff = send;
  c.coll.recvBuff = recv;
  c.coll.count = count;
  c.coll.datatype = datatype;
  void* coll = nullptr;
  ncclProfiler_v4.startEvent(g_nccl.ctx, &coll, &c);
  StartKernelChannels(coll, g_nccl.channels);
}

std::vector<trace::RecordData> RecordsOf(OpType op, uint64_t comm_id) {
  return ncclscope::testing::RecordsOf(g_dir->path(), op, comm_id);
}

class ProfilerPlugin : public ::testing::Test {
 protected:
  void SetUp() override {
    g_nccl = FakeNccl{};
    fakenccl_set_hooks(OnInit, OnAllReduce, nullptr);
    fakenccl_set_group_end_hook(OnGroupEnd);
  }
  void TearDown() override {
    fakenccl_set_hooks(nullptr, nullptr, nullptr);
    fakenccl_set_group_end_hook(nullptr);
  }

  // A communicator created through the interposer; returns our id of it.
  uint64_t NewComm(int nranks, int rank) {
    ncclUniqueId uid;
    EXPECT_EQ(ncclGetUniqueId(&uid), ncclSuccess);
    EXPECT_EQ(ncclCommInitRank(&comm_, nranks, uid, rank), ncclSuccess);
    return trace::CommIdFromUniqueId(&uid, sizeof uid);
  }
  void AllReduce() {
    float buf[4] = {};
    EXPECT_EQ(ncclAllReduce(buf, buf, 4, ncclFloat32, ncclSum, comm_, nullptr), ncclSuccess);
  }
  ncclComm_t comm_ = nullptr;
};

TEST_F(ProfilerPlugin, InitOnTheCreatingThreadAttachesToThatCommunicator) {
  const uint64_t id = NewComm(4, 2);
  ASSERT_NE(g_nccl.ctx, nullptr);
  EXPECT_EQ(static_cast<uint64_t>(g_nccl.mask) & profiler::kWantedMaskV5, profiler::kWantedMaskV5);
  const auto attach = RecordsOf(OpType::kProfilerAttach, id);
  ASSERT_EQ(attach.size(), 1u);
  EXPECT_EQ(attach[0].aux, 0xc0ffeeu);  // NCCL's commHash, kept for people comparing NCCL logs
  EXPECT_EQ(attach[0].count, 5u);
  EXPECT_EQ(attach[0].peer, 2);
}

TEST_F(ProfilerPlugin, FirstKernelChannelWritesOneMarkerWithOurSequenceNumber) {
  const uint64_t id = NewComm(2, 0);
  AllReduce();
  AllReduce();
  const auto markers = RecordsOf(OpType::kDeviceStart, id);
  ASSERT_EQ(markers.size(), 2u);  // two channels each, one marker per collective
  EXPECT_EQ(markers[0].seq, 1u);
  EXPECT_EQ(markers[1].seq, 2u);
  EXPECT_EQ(markers[1].count, 1u);   // NCCL's own per-function number, from 0
  EXPECT_EQ(markers[0].peer, 0);     // channel
  EXPECT_EQ(markers[0].aux, 1000u);  // GPU start time
  EXPECT_EQ(markers[0].t_device_done_ns, trace::kDoneUntracked);
}

TEST_F(ProfilerPlugin, CollectiveWhoseKernelNeverStartsHasNoMarker) {
  const uint64_t id = NewComm(2, 1);
  AllReduce();
  g_nccl.start_kernel = false;
  AllReduce();
  const auto markers = RecordsOf(OpType::kDeviceStart, id);
  ASSERT_EQ(markers.size(), 1u);
  EXPECT_EQ(markers[0].seq, 1u);
  // Its kernel starting later is still recorded, once.
  StartKernelChannels(g_nccl.last_coll, 3);
  const auto later = RecordsOf(OpType::kDeviceStart, id);
  ASSERT_EQ(later.size(), 2u);
  EXPECT_EQ(later[1].seq, 2u);
}

TEST_F(ProfilerPlugin, EventsOutsideAnInterposedCallAreMarkedUnknown) {
  const uint64_t id = NewComm(2, 0);
  AllReduce();
  EmitCollective();  // NCCL reached without our interposer (pncclAllReduce called directly)
  const auto markers = RecordsOf(OpType::kDeviceStart, id);
  ASSERT_EQ(markers.size(), 2u);
  EXPECT_EQ(markers[1].seq, 0u);  // never the number the next recorded call will get
}

TEST_F(ProfilerPlugin, InitOnAnotherThreadFindsTheOnlyOpenCreation) {
  g_nccl.init_on_other_thread = true;
  const uint64_t id = NewComm(8, 5);
  ASSERT_NE(g_nccl.ctx, nullptr);
  EXPECT_EQ(RecordsOf(OpType::kProfilerAttach, id).size(), 1u);
}

TEST_F(ProfilerPlugin, GroupedCreationIsFoundInsideItsGroupEnd) {
  g_nccl.init_at_group_end = true;
  ncclUniqueId uid;
  ASSERT_EQ(ncclGetUniqueId(&uid), ncclSuccess);
  ASSERT_EQ(ncclGroupStart(), ncclSuccess);
  ASSERT_EQ(ncclCommInitRank(&comm_, 4, uid, 3), ncclSuccess);
  EXPECT_EQ(g_nccl.ctx, nullptr);  // not yet: NCCL creates it at the group's end
  ASSERT_EQ(ncclGroupEnd(), ncclSuccess);
  ASSERT_NE(g_nccl.ctx, nullptr);
  const uint64_t id = trace::CommIdFromUniqueId(&uid, sizeof uid);
  EXPECT_EQ(RecordsOf(OpType::kProfilerAttach, id).size(), 1u);
  AllReduce();
  const auto markers = RecordsOf(OpType::kDeviceStart, id);
  ASSERT_EQ(markers.size(), 1u);
  EXPECT_EQ(markers[0].seq, 1u);
}

TEST_F(ProfilerPlugin, ANameThatIsNotTheCommunicatorsLeavesCollectivesUnnumbered) {
  ncclUniqueId uid;
  ASSERT_EQ(ncclGetUniqueId(&uid), ncclSuccess);
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.commName = "tp";
  g_nccl.name = "tp";
  ASSERT_EQ(ncclCommInitRankConfig(&comm_, 2, uid, 0, &config), ncclSuccess);
  const uint64_t tp = trace::CommIdFromUniqueId(&uid, sizeof uid);
  AllReduce();
  ASSERT_EQ(ncclGetUniqueId(&uid), ncclSuccess);
  g_nccl.name = "pp";  // NCCL says this creation is "pp": our match was wrong, trust nothing
  ASSERT_EQ(ncclCommInitRankConfig(&comm_, 2, uid, 0, &config), ncclSuccess);
  const uint64_t other = trace::CommIdFromUniqueId(&uid, sizeof uid);
  AllReduce();
  const auto named = RecordsOf(OpType::kDeviceStart, tp);
  ASSERT_EQ(named.size(), 1u);
  EXPECT_EQ(named[0].seq, 1u);
  const auto mismatched = RecordsOf(OpType::kDeviceStart, other);
  ASSERT_EQ(mismatched.size(), 1u);
  EXPECT_EQ(mismatched[0].seq, 0u);
}

TEST_F(ProfilerPlugin, InitOutsideAnyCreationOptsOutAndLeavesTheMaskAlone) {
  // The interposer records (an interposed call created the runtime), but saw no creation on this
  // thread. Without any interposed call first the profiler would record alone (plugin-only mode,
  // plugin_only_test.cpp).
  ncclUniqueId uid;
  ASSERT_EQ(ncclGetUniqueId(&uid), ncclSuccess);
  void* ctx = &g_nccl;
  int mask = 0;
  ASSERT_EQ(ncclProfiler_v5.init(&ctx, 1, &mask, nullptr, 1, 4, 0, nullptr), ncclSuccess);
  EXPECT_EQ(ctx, nullptr);
  EXPECT_EQ(mask, 0);
  void* handle = &mask;
  abi::EventDescrV5 e{};
  e.type = abi::kColl;
  EXPECT_EQ(ncclProfiler_v5.startEvent(nullptr, &handle, &e), ncclSuccess);
  EXPECT_EQ(handle, nullptr);
  EXPECT_EQ(ncclProfiler_v5.stopEvent(nullptr), ncclSuccess);
  EXPECT_EQ(ncclProfiler_v5.recordEventState(nullptr, abi::kStateKernelChStop, nullptr),
            ncclSuccess);
  EXPECT_EQ(ncclProfiler_v5.finalize(nullptr), ncclSuccess);
}

TEST_F(ProfilerPlugin, ForeignParentPointersAreNeverFollowed) {
  const uint64_t id = NewComm(2, 0);
  g_nccl.start_kernel = false;
  AllReduce();
  uint64_t not_ours[8] = {};
  StartKernelChannels(not_ours, 1);
  StartKernelChannels(nullptr, 1);
  // Inside our pool but not at a handle's start (a PXN pointer from another process could be).
  StartKernelChannels(static_cast<char*>(g_nccl.last_coll) + 8, 1);
  EXPECT_TRUE(RecordsOf(OpType::kDeviceStart, id).empty());
}

TEST_F(ProfilerPlugin, ConcurrentChannelStartsWriteOneMarker) {
  const uint64_t id = NewComm(2, 0);
  g_nccl.start_kernel = false;
  AllReduce();
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t)
    threads.emplace_back([] { StartKernelChannels(g_nccl.last_coll, 4); });
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(RecordsOf(OpType::kDeviceStart, id).size(), 1u);
}

// NCCL runs a group's collectives of one type smallest first (src/enqueue.cc ncclPrepareTasks:
// size-sorted, then a LIFO per function/op/type), so a later call's kernel can start first.
TEST_F(ProfilerPlugin, AGroupsCollectivesStartingOutOfCallOrderEachGetTheirMarker) {
  const uint64_t id = NewComm(2, 0);
  g_nccl.start_kernel = false;
  ASSERT_EQ(ncclGroupStart(), ncclSuccess);
  AllReduce();
  AllReduce();
  ASSERT_EQ(ncclGroupEnd(), ncclSuccess);
  ASSERT_EQ(g_nccl.colls.size(), 2u);
  StartKernelChannels(g_nccl.colls[1], 2);
  StartKernelChannels(g_nccl.colls[0], 2);
  const auto markers = RecordsOf(OpType::kDeviceStart, id);
  ASSERT_EQ(markers.size(), 2u);
  EXPECT_EQ(markers[0].seq, 2u);
  EXPECT_EQ(markers[1].seq, 1u);
}

TEST_F(ProfilerPlugin, V4NumbersCollectivesIssuedOutsideGroupsInsideTheCall) {
  g_nccl.version = 4;
  const uint64_t id = NewComm(2, 1);
  EXPECT_EQ(static_cast<uint64_t>(g_nccl.mask) & profiler::kWantedMaskV4, profiler::kWantedMaskV4);
  AllReduce();  // the fake's v4 Coll carries no arguments: numbered as the call in progress
  ASSERT_EQ(ncclGroupStart(), ncclSuccess);
  AllReduce();  // ... which a grouped call is not
  ASSERT_EQ(ncclGroupEnd(), ncclSuccess);
  const auto markers = RecordsOf(OpType::kDeviceStart, id);
  ASSERT_EQ(markers.size(), 2u);
  EXPECT_EQ(markers[0].seq, 1u);
  EXPECT_EQ(markers[1].seq, 0u);
  EXPECT_EQ(RecordsOf(OpType::kProfilerAttach, id).at(0).count, 4u);
}

// NCCL 2.26-2.27 launch a group's collectives at its end, largest first, and with graph capture or
// CUDA_LAUNCH_BLOCKING from a host-callback thread: the events find their calls by arguments.
TEST_F(ProfilerPlugin, V4NumbersAGroupsCollectivesLaunchedLaterInAnotherOrderOnAnotherThread) {
  g_nccl.version = 4;
  const uint64_t id = NewComm(4, 0);
  g_nccl.launch_later = true;
  float small[4] = {}, large[64] = {};
  uint16_t gathered[4 * 8] = {};
  ASSERT_EQ(ncclGroupStart(), ncclSuccess);
  ASSERT_EQ(ncclAllReduce(small, small, 4, ncclFloat32, ncclSum, comm_, nullptr), ncclSuccess);
  ASSERT_EQ(ncclAllReduce(large, large, 64, ncclFloat32, ncclSum, comm_, nullptr), ncclSuccess);
  ASSERT_EQ(ncclAllGather(gathered, gathered, 8, ncclBfloat16, comm_, nullptr), ncclSuccess);
  ASSERT_EQ(ncclGroupEnd(), ncclSuccess);
  std::thread([&] {
    LaunchV4Coll("AllReduce", large, large, 64, "ncclFloat32");
    LaunchV4Coll("AllGather", gathered, gathered, 16, "ncclInt8");  // bytes (collTaskAppend)
    LaunchV4Coll("AllReduce", small, small, 4, "ncclFloat32");
  }).join();
  auto markers = RecordsOf(OpType::kDeviceStart, id);
  ASSERT_EQ(markers.size(), 3u);
  EXPECT_EQ(markers[0].seq, 2u);  // the large AllReduce was the group's second call
  EXPECT_EQ(markers[1].seq, 3u);
  EXPECT_EQ(markers[2].seq, 1u);
  // The same buffers again, ungrouped: the newest call, once.
  ASSERT_EQ(ncclAllReduce(small, small, 4, ncclFloat32, ncclSum, comm_, nullptr), ncclSuccess);
  LaunchV4Coll("AllReduce", small, small, 4, "ncclFloat32");
  LaunchV4Coll("AllReduce", small, small, 4, "ncclFloat32");  // no call left: unknown
  markers = RecordsOf(OpType::kDeviceStart, id);
  ASSERT_EQ(markers.size(), 5u);
  EXPECT_EQ(markers[3].seq, 4u);
  EXPECT_EQ(markers[4].seq, 0u);
}

}  // namespace
}  // namespace ncclscope::plugin

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  ncclscope::testing::TempDir dir;
  ncclscope::plugin::g_dir = &dir;
  setenv("NCCLSCOPE_DIR", dir.path().c_str(), 1);
  setenv("NCCLSCOPE_CUDA_LIBRARY", FAKE_CUDA_LIBRARY, 1);
  setenv("NCCLSCOPE_HEARTBEAT_MS", "10", 1);
  return RUN_ALL_TESTS();
}
