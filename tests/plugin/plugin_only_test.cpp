// Plugin-only recording: the profiler tables driven as NCCL 2.28.9 drives them, with no interposed
// call at all (NCCL_PROFILER_PLUGIN without LD_PRELOAD), and the records read back from the ring.
// The event orders below are NCCL's: src/enqueue.cc (collTaskAppend, p2pTaskAppend, taskAppend:
// GroupApi, then CollApi or one P2pApi per (peer, direction) part, started and stopped inside the
// call), src/group.cc (ncclGroupEndInternal: GroupEndApiStart when the outermost group ends, the
// GroupApi stop at its exit), src/plugin/profiler.cc (ncclProfilerStartTaskEvents: Coll parented
// to its CollApi, P2p to its P2pApi, with the peer; ncclProfilerStart/StopKernelChEvent: one
// KernelCh per channel, the KernelChStop state then the stop).
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "../trace/temp_dir.h"
#include "plugin/core/plugin_only_names.h"
#include "plugin/core/profiler_abi.h"
#include "plugin/profiler/plugin_only_recorder.h"
#include "plugin/profiler/proxy_progress.h"
#include "plugin/runtime/runtime.h"
#include "tests/plugin/own_ring.h"
#include "trace/ring_reader.h"

extern "C" const ncclscope::plugin::prof_abi::TableV5 ncclProfiler_v5;
extern "C" const ncclscope::plugin::prof_abi::TableV4 ncclProfiler_v4;

namespace ncclscope::plugin {
namespace {

namespace abi = prof_abi;
using trace::OpType;

ncclscope::testing::TempDir* g_dir = nullptr;
constexpr int kGroupStartApiStop = 23;
constexpr int kGroupEndApiStart = 24;

trace::RingSnapshot OwnRing() {
  return ncclscope::testing::OwnRing(g_dir->path());
}

std::vector<trace::RecordData> RecordsOf(OpType op, uint64_t comm_id) {
  return ncclscope::testing::RecordsOf(g_dir->path(), op, comm_id);
}

// One communicator as NCCL (v5 table) sees it, and the events NCCL emits for its operations.
struct NcclV5 {
  void* ctx = nullptr;
  int mask = 0;
  int rank = 0;
  int nranks = 0;
  uint64_t nccl_seq = 0;
  void* stream = reinterpret_cast<void*>(0x5000);

  NcclV5(uint64_t hash, const char* name, int nranks_in, int rank_in)
      : rank(rank_in), nranks(nranks_in) {
    EXPECT_EQ(ncclProfiler_v5.init(&ctx, hash, &mask, name, 1, nranks, rank, nullptr), ncclSuccess);
  }
  void* Start(const abi::EventDescrV5& e) {
    void* h = nullptr;
    EXPECT_EQ(ncclProfiler_v5.startEvent(ctx, &h, const_cast<abi::EventDescrV5*>(&e)), ncclSuccess);
    return h;
  }
  static void Stop(void* h) {
    if (h != nullptr) ncclProfiler_v5.stopEvent(h);
  }
  static void State(void* h, int state) {
    abi::StateArgsV4 args{};
    if (h != nullptr) ncclProfiler_v5.recordEventState(h, state, &args);
  }
  // ncclProfilerStartGroupApiEvent + GroupStartApiStop: at the first task of an outermost group.
  void* GroupApi(int depth) {
    abi::EventDescrV5 e{};
    e.type = abi::kGroupApi;
    e.groupApi.groupDepth = depth;
    void* g = Start(e);
    State(g, kGroupStartApiStop);
    return g;
  }
  // collTaskAppend: CollApi started and stopped inside the call.
  void* CollApi(void* group, const char* func, size_t count, const char* dtype, int root) {
    abi::EventDescrV5 e{};
    e.type = abi::kCollApi;
    e.parentObj = group;
    e.collApi = {func, count, dtype, root, stream, false};
    void* h = Start(e);
    Stop(h);
    return h;
  }
  // p2pTaskAppend: P2pApi, without the peer.
  void* P2pApi(void* group, const char* func, size_t count) {
    abi::EventDescrV5 e{};
    e.type = abi::kP2pApi;
    e.parentObj = group;
    e.p2pApi = {func, count, "ncclFloat32", stream, false};
    void* h = Start(e);
    Stop(h);
    return h;
  }
  // Launch: Coll or P2p (started, stopped: enqueued, not finished).
  void* Coll(void* api, const char* func, int channels) {
    abi::EventDescrV5 e{};
    e.type = abi::kColl;
    e.parentObj = api;
    e.rank = rank;
    e.coll.seqNumber = nccl_seq++;
    e.coll.func = func;
    e.coll.nChannels = static_cast<uint8_t>(channels);
    void* h = Start(e);
    Stop(h);
    return h;
  }
  void* P2p(void* api, const char* func, int peer, int channels) {
    abi::EventDescrV5 e{};
    e.type = abi::kP2p;
    e.parentObj = api;
    e.rank = rank;
    e.p2p.func = func;
    e.p2p.peer = peer;
    e.p2p.nChannels = static_cast<uint8_t>(channels);
    void* h = Start(e);
    Stop(h);
    return h;
  }
  // Proxy thread: one KernelCh per channel.
  std::vector<void*> KernelStart(void* task, int channels) {
    std::vector<void*> out;
    for (int ch = 0; ch < channels; ++ch) {
      abi::EventDescrV5 e{};
      e.type = abi::kKernelCh;
      e.parentObj = task;
      e.kernelCh = {static_cast<uint8_t>(ch), 7000u + static_cast<uint64_t>(ch)};
      out.push_back(Start(e));
    }
    return out;
  }
  static void KernelStop(void* channel) {
    State(channel, abi::kStateKernelChStop);
    Stop(channel);
  }
  // An ungrouped collective: the implicit group of depth 1 around one call.
  void* AllReduce(size_t count) {
    void* g = GroupApi(1);
    void* api = CollApi(g, "AllReduce", count, "ncclFloat32", 0);
    State(g, kGroupEndApiStart);
    void* coll = Coll(api, "AllReduce", 2);
    Stop(g);
    return coll;
  }
};

TEST(PluginOnlyNames, MapNcclsStringsBack) {
  using plugin_only::DtypeOfName;
  using plugin_only::OpOfFunc;
  EXPECT_EQ(OpOfFunc("AllReduce"), OpType::kAllReduce);
  EXPECT_EQ(OpOfFunc("ReduceScatter"), OpType::kReduceScatter);
  EXPECT_EQ(OpOfFunc("Recv"), OpType::kRecv);
  EXPECT_EQ(OpOfFunc("SendRecv"), OpType::kUnknown);
  EXPECT_EQ(OpOfFunc(nullptr), OpType::kUnknown);
  EXPECT_EQ(DtypeOfName("ncclBfloat16"), ncclBfloat16);
  EXPECT_EQ(DtypeOfName("ncclFloat8e5m2"), ncclFloat8e5m2);
  EXPECT_EQ(DtypeOfName("Unknown"), -1);  // what NCCL 2.28.9 calls ncclUint8
  EXPECT_EQ(DtypeOfName(nullptr), -1);
}

TEST(PluginOnly, InitWithoutInterposerCreatesTheRuntimeAndTheCommunicator) {
  NcclV5 n(0xa11ce, "tp", 4, 2);
  ASSERT_NE(n.ctx, nullptr);
  EXPECT_TRUE(plugin_only::OwnsContext(n.ctx));
  Runtime* rt = g_runtime.load();
  ASSERT_NE(rt, nullptr);
  ASSERT_NE(rt, kRuntimeOff);
  EXPECT_EQ(static_cast<uint64_t>(n.mask) & plugin_only::kMaskV5, plugin_only::kMaskV5);
  const trace::RingSnapshot snap = OwnRing();
  bool found = false;
  for (const trace::CommInfo& c : snap.comms) {
    if (c.id != 0xa11ce) continue;
    found = true;
    EXPECT_EQ(c.name, "tp");
    EXPECT_EQ(c.rank, 2);
    EXPECT_EQ(c.nranks, 4);
  }
  EXPECT_TRUE(found) << "no comm table entry with NCCL's commHash as its id";
  const auto created = RecordsOf(OpType::kCommInitRank, 0xa11ce);
  ASSERT_EQ(created.size(), 1u);
  EXPECT_EQ(created[0].aux, (uint64_t{2} << 32) | 4u);
  EXPECT_EQ(created[0].result, ncclSuccess);  // closed: never reads as stuck in creation
}

TEST(PluginOnly, UnnamedCommunicatorIsNamedAfterItsHash) {
  NcclV5 n(0xbeef, nullptr, 2, 0);
  for (const trace::CommInfo& c : OwnRing().comms) {
    if (c.id == 0xbeef) {
      EXPECT_EQ(c.name, "comm-000000000000beef");
    }
  }
}

TEST(PluginOnly, CollectivesAreNumberedWithSignatureAndCompleteWhenAllChannelsStop) {
  NcclV5 n(0xc0111, "dp", 4, 1);
  void* g = n.GroupApi(1);
  void* api = n.CollApi(g, "Broadcast", 256, "ncclBfloat16", 3);
  n.State(g, kGroupEndApiStart);
  void* coll = n.Coll(api, "Broadcast", 2);
  n.Stop(g);
  void* second = n.AllReduce(64);

  auto records = RecordsOf(OpType::kBroadcast, 0xc0111);
  ASSERT_EQ(records.size(), 1u);
  const trace::RecordData& b = records[0];
  EXPECT_EQ(b.seq, 1u);
  EXPECT_EQ(b.count, 256u);
  EXPECT_EQ(b.dtype, ncclBfloat16);
  EXPECT_EQ(b.peer, 3);    // root
  EXPECT_EQ(b.redop, -1);  // in no event
  EXPECT_EQ(b.stream, 0x5000u);
  EXPECT_LE(b.t_enter_ns, b.t_exit_ns);
  EXPECT_NE(b.group_id, 0u);
  EXPECT_EQ(b.flags & trace::kFlagInGroup, 0u);  // NCCL's implicit group, not the user's
  EXPECT_TRUE(trace::IsPending(b.t_device_done_ns));
  auto reduce = RecordsOf(OpType::kAllReduce, 0xc0111);
  ASSERT_EQ(reduce.size(), 1u);
  EXPECT_EQ(reduce[0].seq, 2u);
  EXPECT_EQ(reduce[0].peer, -1);  // NCCL says root 0 for a collective without one
  EXPECT_NE(reduce[0].group_id, b.group_id);

  const std::vector<void*> channels = n.KernelStart(coll, 2);
  auto markers = RecordsOf(OpType::kDeviceStart, 0xc0111);
  ASSERT_EQ(markers.size(), 1u);  // the first channel's start
  EXPECT_EQ(markers[0].seq, 1u);
  EXPECT_EQ(markers[0].aux, 7000u);  // GPU start time, kept apart from host times
  EXPECT_EQ(markers[0].count, 0u);   // NCCL's per-function number

  NcclV5::KernelStop(channels[0]);
  EXPECT_TRUE(trace::IsPending(RecordsOf(OpType::kBroadcast, 0xc0111)[0].t_device_done_ns))
      << "one channel of two stopped: not done";
  NcclV5::KernelStop(channels[1]);
  const int64_t done = RecordsOf(OpType::kBroadcast, 0xc0111)[0].t_device_done_ns;
  EXPECT_GE(done, b.t_exit_ns);  // host time of the last stop
  // The second collective's kernel never ran: still pending, as a hung one stays.
  EXPECT_TRUE(trace::IsPending(RecordsOf(OpType::kAllReduce, 0xc0111)[0].t_device_done_ns));
  (void)second;
}

TEST(PluginOnly, SendRecvInAUserGroupAreNumberedPerPeerAtGroupEnd) {
  NcclV5 n(0x9009, "pp", 4, 1);
  // ncclGroupStart; ncclSend(to 2); ncclRecv(from 0); ncclSend(to 2); ncclGroupEnd.
  void* g = n.GroupApi(2);
  void* s1 = n.P2pApi(g, "Send", 10);
  void* r1 = n.P2pApi(g, "Recv", 20);
  void* s2 = n.P2pApi(g, "Send", 30);
  EXPECT_TRUE(RecordsOf(OpType::kSend, 0x9009).empty()) << "no peer yet: recorded at P2p";
  n.State(g, kGroupEndApiStart);
  auto ends = RecordsOf(OpType::kGroupEnd, 0);
  ASSERT_FALSE(ends.empty());
  EXPECT_EQ(ends.back().result, trace::kResultInCall);  // a rank stuck in its group end shows it
  void* t1 = n.P2p(s1, "Send", 2, 1);
  n.P2p(r1, "Recv", 0, 1);
  n.P2p(s2, "Send", 2, 1);
  n.Stop(g);

  const auto sends = RecordsOf(OpType::kSend, 0x9009);
  ASSERT_EQ(sends.size(), 2u);
  EXPECT_EQ(sends[0].seq, 1u);
  EXPECT_EQ(sends[1].seq, 2u);  // second send to the same peer
  EXPECT_EQ(sends[0].peer, 2);
  EXPECT_EQ(sends[0].count, 10u);
  EXPECT_EQ(sends[1].count, 30u);
  EXPECT_EQ(sends[0].dtype, ncclFloat32);
  EXPECT_NE(sends[0].flags & trace::kFlagInGroup, 0u);
  const auto recvs = RecordsOf(OpType::kRecv, 0x9009);
  ASSERT_EQ(recvs.size(), 1u);
  EXPECT_EQ(recvs[0].seq, 1u);  // its own (comm, peer, direction) counter
  EXPECT_EQ(recvs[0].peer, 0);
  EXPECT_EQ(recvs[0].group_id, sends[0].group_id);
  const trace::RecordData end = RecordsOf(OpType::kGroupEnd, 0).back();
  EXPECT_EQ(end.group_id, sends[0].group_id);
  EXPECT_EQ(end.result, ncclSuccess);
  EXPECT_GE(end.t_exit_ns, end.t_enter_ns);

  auto channel = n.KernelStart(t1, 1);
  const auto started = RecordsOf(OpType::kP2pDeviceStart, 0x9009);
  ASSERT_EQ(started.size(), 1u);
  EXPECT_EQ(started[0].seq, 1u);
  EXPECT_EQ(started[0].peer, 2);
  EXPECT_EQ(started[0].redop, static_cast<int32_t>(OpType::kSend));
  EXPECT_EQ(started[0].dtype, 0);    // channel
  EXPECT_EQ(started[0].aux, 7000u);  // GPU start time
  NcclV5::KernelStop(channel[0]);
  EXPECT_GT(RecordsOf(OpType::kSend, 0x9009)[0].t_device_done_ns, 0);
  EXPECT_TRUE(trace::IsPending(RecordsOf(OpType::kSend, 0x9009)[1].t_device_done_ns));
}

// NCCL 2.28.9 (taskAppend) runs AlltoAll as one P2pApi per (peer, direction), "Send" and "Recv",
// the rank itself included: recorded as those parts, which match the peers' parts.
TEST(PluginOnly, AlltoAllIsRecordedAsItsPerPeerParts) {
  NcclV5 n(0xa2a, "ep", 3, 0);
  void* g = n.GroupApi(1);
  std::vector<void*> parts;
  for (int r = 0; r < 3; ++r) {
    parts.push_back(n.P2pApi(g, "Send", 8));
    parts.push_back(n.P2pApi(g, "Recv", 8));
  }
  n.State(g, kGroupEndApiStart);
  for (size_t r = 0; r < 3; ++r) {
    n.P2p(parts[2 * r], "Send", static_cast<int>(r), 1);
    n.P2p(parts[2 * r + 1], "Recv", static_cast<int>(r), 1);
  }
  n.Stop(g);
  const auto sends = RecordsOf(OpType::kSend, 0xa2a);
  const auto recvs = RecordsOf(OpType::kRecv, 0xa2a);
  ASSERT_EQ(sends.size(), 3u);
  ASSERT_EQ(recvs.size(), 3u);
  for (int r = 0; r < 3; ++r) {
    EXPECT_EQ(sends[r].peer, r);
    EXPECT_EQ(sends[r].seq, 1u);
    EXPECT_EQ(recvs[r].peer, r);
    EXPECT_EQ(sends[r].group_id, sends[0].group_id);  // one group: not each other's blockers
  }
  EXPECT_TRUE(RecordsOf(OpType::kAlltoAll, 0xa2a).empty());
  EXPECT_TRUE(RecordsOf(OpType::kGroupEnd, 0).empty() ||
              RecordsOf(OpType::kGroupEnd, 0).back().group_id != sends[0].group_id)
      << "an implicit group has no group_end record";
}

TEST(PluginOnly, EventsOfAnotherPluginsHandlesAreIgnored) {
  NcclV5 n(0x0dd, "x", 2, 0);
  int foreign = 0;
  n.Coll(&foreign, "AllReduce", 1);
  n.KernelStart(&foreign, 1);
  EXPECT_TRUE(RecordsOf(OpType::kAllReduce, 0x0dd).empty());
  EXPECT_TRUE(RecordsOf(OpType::kDeviceStart, 0x0dd).empty());
}

// v4 (NCCL 2.27) has no API events: Coll and P2p at launch are the records.
TEST(PluginOnly, V4RecordsFromCollAndP2pEvents) {
  void* ctx = nullptr;
  int mask = 0;
  ASSERT_EQ(ncclProfiler_v4.init(&ctx, &mask, "v4", 0x4444, 1, 2, 1, nullptr), ncclSuccess);
  ASSERT_NE(ctx, nullptr);
  EXPECT_EQ(static_cast<uint64_t>(mask) & plugin_only::kMaskV4, plugin_only::kMaskV4);
  void* group = nullptr;
  abi::EventDescrV4 g{};
  g.type = static_cast<uint8_t>(abi::kGroup);
  ncclProfiler_v4.startEvent(ctx, &group, &g);
  abi::EventDescrV4 c{};
  c.type = static_cast<uint8_t>(abi::kColl);
  c.parentObj = group;
  c.coll.func = "AllGather";
  c.coll.count = 64;  // bytes: NCCL converts AllGather to ncclInt8
  c.coll.datatype = "ncclInt8";
  c.coll.nChannels = 1;
  void* coll = nullptr;
  ncclProfiler_v4.startEvent(ctx, &coll, &c);
  abi::EventDescrV4 p{};
  p.type = static_cast<uint8_t>(abi::kP2p);
  p.parentObj = group;
  p.p2p.func = "Recv";
  p.p2p.count = 5;
  p.p2p.datatype = "ncclInt32";
  p.p2p.peer = 0;
  p.p2p.nChannels = 1;
  void* p2p = nullptr;
  ncclProfiler_v4.startEvent(ctx, &p2p, &p);
  const auto gathers = RecordsOf(OpType::kAllGather, 0x4444);
  ASSERT_EQ(gathers.size(), 1u);
  EXPECT_EQ(gathers[0].seq, 1u);
  EXPECT_EQ(gathers[0].count, 64u);
  EXPECT_EQ(gathers[0].dtype, ncclInt8);
  const auto recvs = RecordsOf(OpType::kRecv, 0x4444);
  ASSERT_EQ(recvs.size(), 1u);
  EXPECT_EQ(recvs[0].peer, 0);
  EXPECT_EQ(recvs[0].seq, 1u);
  EXPECT_EQ(recvs[0].group_id, gathers[0].group_id);

  abi::EventDescrV4 k{};
  k.type = static_cast<uint8_t>(abi::kKernelCh);
  k.parentObj = coll;
  void* ch = nullptr;
  ncclProfiler_v4.startEvent(ctx, &ch, &k);
  abi::StateArgsV4 args{};
  ncclProfiler_v4.recordEventState(ch, abi::kStateKernelChStop, &args);
  ncclProfiler_v4.stopEvent(ch);
  EXPECT_GT(RecordsOf(OpType::kAllGather, 0x4444)[0].t_device_done_ns, 0);
}

// A kernel that runs long (a large broadcast, one queued behind others) while thousands of other
// operations come and go on the rank: more than both handle pools hold (operations and kernel
// channels). Its handles are not reused under it, so its KernelChStop reaches it and it completes
// in the records; reused, it would stay pending forever and read as hung.
TEST(PluginOnly, ALongKernelCompletesAfterMorePoolsWorthOfOtherOperations) {
  NcclV5 n(0x10a6, "long", 2, 0);
  void* g = n.GroupApi(1);
  void* api = n.CollApi(g, "Broadcast", 1 << 20, "ncclInt8", 0);
  n.State(g, kGroupEndApiStart);
  void* coll = n.Coll(api, "Broadcast", 2);
  n.Stop(g);
  const std::vector<void*> long_channels = n.KernelStart(coll, 2);
  const uint64_t others = plugin_only::kHandlePoolSize / 2 + 100;  // group + operation handle each
  static_assert(plugin_only::kHandlePoolSize / 2 + 100 > profiler::kKernelChPoolSize / 2,
                "two kernel channels each: past the kernel channel pool too");
  for (uint64_t i = 0; i < others; ++i) {
    void* other = n.AllReduce(8);
    for (void* ch : n.KernelStart(other, 2)) NcclV5::KernelStop(ch);
  }
  const std::vector<trace::RecordData> broadcasts = RecordsOf(OpType::kBroadcast, 0x10a6);
  ASSERT_EQ(broadcasts.size(), 1u);
  EXPECT_TRUE(trace::IsPending(broadcasts[0].t_device_done_ns));
  for (void* ch : long_channels) NcclV5::KernelStop(ch);
  EXPECT_GT(RecordsOf(OpType::kBroadcast, 0x10a6)[0].t_device_done_ns, 0)
      << "the long kernel's stops reached another operation";
  const std::vector<trace::RecordData> reduces = RecordsOf(OpType::kAllReduce, 0x10a6);
  ASSERT_EQ(reduces.size(), others);
  for (const trace::RecordData& r : reduces) ASSERT_GT(r.t_device_done_ns, 0) << r.seq;
  EXPECT_EQ(plugin_only::GetStats().busy_reused, 0u);
}

TEST(PluginOnly, HeartbeatComesFromTheBackgroundThread) {
  NcclV5 n(0x4ea7, "hb", 2, 0);
  Runtime* rt = g_runtime.load();
  ASSERT_NE(rt, nullptr);
  EXPECT_TRUE(rt->poller_started.load());
  // The thread's first pass writes the heartbeat; wait for it without a time bound.
  while (OwnRing().heartbeat_monotonic_ns == 0) usleep(1000);
  SUCCEED();
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
