// The profiler tables driven with NCCL 2.28.9's point-to-point and proxy event sequences, with the
// interposer in front (the fake libnccl calls the hooks below inside the calls where NCCL emits
// the events), reading back what lands in the ring. Orders followed:
//   - src/enqueue.cc, p2pTaskAppend: one P2pApi per (peer, direction) part, started and stopped
//     inside ncclSend/ncclRecv, and inside ncclAlltoAll once per peer and direction, named "Send"
//     and "Recv" (taskAppend splits AlltoAll/Gather/Scatter into parts);
//   - src/plugin/profiler.cc, ncclProfilerStartTaskEvents: at launch one P2p per part, parent
//     the part's P2pApi (v5) or the Group (v4), with its peer;
//   - src/transport/profiler.cc, profilerProxyProgress: KernelCh start per channel, parent the
//     P2p/Coll event, later recordEventState(KernelChStop) and stop;
//   - src/proxy.cc ProxyAppend, src/transport/net.cc sendProxyProgress: ProxyOp (parent the
//     Coll/P2p event, pid of the issuing process), per step start, SendGPUWait, SendPeerWait,
//     SendWait, stop; ProxyOp stop when every step is done.
// The background thread's heartbeat is set to a minute so the test itself plays its tick.
#include <gtest/gtest.h>
#include <nccl.h>
#include <unistd.h>

#include <cstdlib>
#include <vector>

#include "../trace/temp_dir.h"
#include "plugin/core/profiler_abi.h"
#include "plugin/profiler/profiler_plugin.h"
#include "plugin/profiler/proxy_mask.h"
#include "plugin/profiler/proxy_progress.h"
#include "plugin/runtime/runtime.h"
#include "tests/plugin/own_ring.h"
#include "trace/identity.h"
#include "trace/ring_reader.h"

extern "C" void fakenccl_set_hooks(void (*on_init)(void*, int, int),
                                   void (*on_allreduce)(void*, int, int), void* arg);
extern "C" void fakenccl_set_group_end_hook(void (*on_group_end)(void*, int, int));
extern "C" void fakenccl_set_p2p_hook(void (*on_p2p)(int kind, int peer));
extern "C" const ncclscope::plugin::prof_abi::TableV5 ncclProfiler_v5;
extern "C" const ncclscope::plugin::prof_abi::TableV4 ncclProfiler_v4;

namespace ncclscope::plugin {
namespace {

namespace abi = prof_abi;
using trace::OpType;

ncclscope::testing::TempDir* g_dir = nullptr;

struct Part {
  void* api = nullptr;
  const char* func = nullptr;
  int peer = -1;
};

struct FakeNccl {
  int version = 5;
  int mask = 0;
  void* ctx = nullptr;
  int nranks = 4;
  std::vector<Part> parts;      // P2pApi events of the group not launched yet
  std::vector<void*> launched;  // P2p/Coll handles of the last launch
  void* last_coll = nullptr;
};
FakeNccl g_nccl;

void OnInit(void*, int rank, int nranks) {
  if (g_nccl.version == 5) {
    ncclProfiler_v5.init(&g_nccl.ctx, 0xc0ffee, &g_nccl.mask, nullptr, 1, nranks, rank, nullptr);
  } else {
    ncclProfiler_v4.init(&g_nccl.ctx, &g_nccl.mask, nullptr, 0xc0ffee, 1, nranks, rank, nullptr);
  }
}

void* Start5(abi::EventDescrV5 d) {
  void* h = nullptr;
  ncclProfiler_v5.startEvent(g_nccl.ctx, &h, &d);
  return h;
}
void* Start4(abi::EventDescrV4 d) {
  void* h = nullptr;
  ncclProfiler_v4.startEvent(g_nccl.ctx, &h, &d);
  return h;
}

void KernelChannel(void* op, int channel, bool stop) {
  void* h = nullptr;
  if (g_nccl.version == 5) {
    abi::EventDescrV5 k{};
    k.type = abi::kKernelCh;
    k.parentObj = op;
    k.kernelCh = {static_cast<uint8_t>(channel), 5000};
    h = Start5(k);
  } else {
    abi::EventDescrV4 k{};
    k.type = static_cast<uint8_t>(abi::kKernelCh);
    k.parentObj = op;
    k.kernelCh = {static_cast<uint8_t>(channel), 5000};
    h = Start4(k);
  }
  if (stop && h != nullptr) {
    abi::StateArgsV4 a{};
    a.kernelCh.pTimer = 6000;
    ncclProfiler_v5.recordEventState(h, abi::kStateKernelChStop, &a);
    ncclProfiler_v5.stopEvent(h);
  }
}

// P2pApi inside the call (v5 only: v4 has none).
void AddPart(const char* func, int peer) {
  Part p{nullptr, func, peer};
  if (g_nccl.version == 5) {
    abi::EventDescrV5 a{};
    a.type = abi::kP2pApi;
    a.p2pApi.func = func;
    p.api = Start5(a);
    ncclProfiler_v5.stopEvent(p.api);
  }
  g_nccl.parts.push_back(p);
}

// The launch: one P2p per part, then every part's kernel channel 0 starts.
void Launch() {
  g_nccl.launched.clear();
  for (const Part& p : g_nccl.parts) {
    void* h = nullptr;
    if (g_nccl.version == 5) {
      abi::EventDescrV5 e{};
      e.type = abi::kP2p;
      e.parentObj = p.api;
      e.p2p.func = p.func;
      e.p2p.peer = p.peer;
      h = Start5(e);
    } else {
      abi::EventDescrV4 e{};
      e.type = static_cast<uint8_t>(abi::kP2p);
      e.p2p.func = p.func;
      e.p2p.peer = p.peer;
      h = Start4(e);
    }
    g_nccl.launched.push_back(h);
  }
  g_nccl.parts.clear();
  for (void* h : g_nccl.launched) KernelChannel(h, 0, true);
}

int g_group_depth = 0;  // the fake's, mirrored: an ungrouped call launches inside itself

void OnP2p(int kind, int peer) {
  if (kind == 2) {
    for (int r = 0; r < g_nccl.nranks; ++r) {
      AddPart("Send", r);
      AddPart("Recv", r);
    }
  } else {
    AddPart(kind == 0 ? "Send" : "Recv", peer);
  }
  if (g_group_depth == 0) Launch();
}

void OnGroupEnd(void*, int, int) {
  Launch();
}

void OnAllReduce(void*, int, int) {
  abi::EventDescrV5 a{};
  a.type = abi::kCollApi;
  a.collApi.func = "AllReduce";
  void* api = Start5(a);
  abi::EventDescrV5 c{};
  c.type = abi::kColl;
  c.parentObj = api;
  c.coll.func = "AllReduce";
  g_nccl.last_coll = Start5(c);
}

std::vector<trace::RecordData> RecordsOf(OpType op, uint64_t comm_id) {
  return ncclscope::testing::RecordsOf(g_dir->path(), op, comm_id);
}

// One tick of the background thread's publishing.
void Tick() {
  Runtime* rt = g_runtime.load();
  ASSERT_NE(rt, nullptr);
  ASSERT_NE(rt, kRuntimeOff);
  profiler::PublishProgress(*rt->ring, 1);
}

class ProfilerP2p : public ::testing::Test {
 protected:
  void SetUp() override {
    g_nccl = FakeNccl{};
    fakenccl_set_hooks(OnInit, OnAllReduce, nullptr);
    fakenccl_set_group_end_hook(OnGroupEnd);
    fakenccl_set_p2p_hook(OnP2p);
  }
  void TearDown() override {
    fakenccl_set_hooks(nullptr, nullptr, nullptr);
    fakenccl_set_group_end_hook(nullptr);
    fakenccl_set_p2p_hook(nullptr);
  }
  uint64_t NewComm(int nranks, int rank) {
    g_nccl.nranks = nranks;
    ncclUniqueId uid;
    EXPECT_EQ(ncclGetUniqueId(&uid), ncclSuccess);
    EXPECT_EQ(ncclCommInitRank(&comm_, nranks, uid, rank), ncclSuccess);
    return trace::CommIdFromUniqueId(&uid, sizeof uid);
  }
  void GroupStart() {
    ++g_group_depth;
    ASSERT_EQ(ncclGroupStart(), ncclSuccess);
  }
  void GroupEnd() {
    --g_group_depth;
    ASSERT_EQ(ncclGroupEnd(), ncclSuccess);
  }
  void Send(int peer) {
    float b[2] = {};
    EXPECT_EQ(ncclSend(b, 2, ncclFloat32, peer, comm_, nullptr), ncclSuccess);
  }
  void Recv(int peer) {
    float b[2] = {};
    EXPECT_EQ(ncclRecv(b, 2, ncclFloat32, peer, comm_, nullptr), ncclSuccess);
  }
  ncclComm_t comm_ = nullptr;
};

TEST_F(ProfilerP2p, DefaultMaskAsksForP2pEventsButNoProxyDetail) {
  NewComm(2, 0);
  const auto m = static_cast<uint64_t>(static_cast<unsigned>(g_nccl.mask));
  EXPECT_EQ(m & profiler::kWantedMaskV5, profiler::kWantedMaskV5);
  EXPECT_EQ(m & (abi::kProxyOp | abi::kProxyStep), 0u);
}

TEST_F(ProfilerP2p, GroupedSendRecvGetTheirPerPeerNumbers) {
  const uint64_t id = NewComm(4, 0);
  for (int round = 0; round < 2; ++round) {
    GroupStart();
    Send(1);
    Recv(3);
    Send(2);
    GroupEnd();
  }
  const auto m = RecordsOf(OpType::kP2pDeviceStart, id);
  ASSERT_EQ(m.size(), 6u);
  EXPECT_EQ(m[0].redop, static_cast<int32_t>(OpType::kSend));
  EXPECT_EQ(m[0].peer, 1);
  EXPECT_EQ(m[1].redop, static_cast<int32_t>(OpType::kRecv));
  EXPECT_EQ(m[1].peer, 3);
  EXPECT_EQ(m[2].peer, 2);
  for (size_t i = 0; i < 3; ++i) EXPECT_EQ(m[i].seq, 1u) << i;
  for (size_t i = 3; i < 6; ++i) EXPECT_EQ(m[i].seq, 2u) << i;
  EXPECT_EQ(m[0].dtype, 0);    // kernel channel
  EXPECT_EQ(m[0].aux, 5000u);  // GPU start
  EXPECT_TRUE(RecordsOf(OpType::kDeviceStart, id).empty());
}

TEST_F(ProfilerP2p, AlltoAllPartsWriteOneCollectiveMarker) {
  const uint64_t id = NewComm(4, 1);
  float b[8] = {};
  ASSERT_EQ(ncclAlltoAll(b, b, 2, ncclFloat32, comm_, nullptr), ncclSuccess);
  ASSERT_EQ(ncclAlltoAll(b, b, 2, ncclFloat32, comm_, nullptr), ncclSuccess);
  const auto m = RecordsOf(OpType::kDeviceStart, id);
  ASSERT_EQ(m.size(), 2u);  // 8 parts each, one marker per AlltoAll
  EXPECT_EQ(m[0].seq, 1u);
  EXPECT_EQ(m[1].seq, 2u);
  EXPECT_TRUE(RecordsOf(OpType::kP2pDeviceStart, id).empty());
}

TEST_F(ProfilerP2p, V4NumbersUngroupedSendsOnly) {
  g_nccl.version = 4;
  const uint64_t id = NewComm(2, 0);
  Send(1);
  GroupStart();
  Send(1);
  GroupEnd();
  const auto m = RecordsOf(OpType::kP2pDeviceStart, id);
  ASSERT_EQ(m.size(), 2u);
  EXPECT_EQ(m[0].seq, 1u);
  EXPECT_EQ(m[0].peer, 1);
  EXPECT_EQ(m[1].seq, 0u);  // launched by the group: which send it was is unknown
  EXPECT_EQ(m[1].redop, static_cast<int32_t>(OpType::kSend));
}

TEST_F(ProfilerP2p, SendOutsideAnInterposedCallIsUnknown) {
  const uint64_t id = NewComm(2, 0);
  AddPart("Send", 1);  // pncclSend called directly: no interposed call in progress
  Launch();
  const auto m = RecordsOf(OpType::kP2pDeviceStart, id);
  ASSERT_EQ(m.size(), 1u);
  EXPECT_EQ(m[0].seq, 0u);
}

// One network send of a collective: ProxyOp, one step stuck in SendWait (isend posted, the
// network never completes it), as net.cc sendProxyProgress records it.
struct StuckSend {
  void* op = nullptr;
  void* step = nullptr;
};
StuckSend StartStuckSend(void* coll, int peer, int channel) {
  StuckSend s;
  abi::EventDescrV5 o{};
  o.type = abi::kProxyOp;
  o.parentObj = coll;
  o.proxyOp = {getpid(), static_cast<uint8_t>(channel), peer, 4, 1 << 20, 1};
  s.op = Start5(o);
  abi::EventDescrV5 st{};
  st.type = abi::kProxyStep;
  st.parentObj = s.op;
  st.proxyStep.step = 0;
  s.step = Start5(st);
  abi::StateArgsV4 a{};
  ncclProfiler_v5.recordEventState(s.step, 8, &a);   // SendGPUWait
  ncclProfiler_v5.recordEventState(s.step, 20, &a);  // SendPeerWait
  ncclProfiler_v5.recordEventState(s.step, 20, &a);  // polled again: no credit yet
  ncclProfiler_v5.recordEventState(s.step, 9, &a);   // SendWait
  return s;
}

TEST_F(ProfilerP2p, ProxyProgressOfAnOperationInFlightAcrossATick) {
  const uint64_t id = NewComm(2, 0);
  float b[2] = {};
  ASSERT_EQ(ncclAllReduce(b, b, 2, ncclFloat32, ncclSum, comm_, nullptr), ncclSuccess);
  const StuckSend s = StartStuckSend(g_nccl.last_coll, 1, 3);
  ASSERT_NE(s.op, nullptr);
  ASSERT_NE(s.step, nullptr);
  Tick();  // first sight: it may yet end before the next tick
  EXPECT_TRUE(RecordsOf(OpType::kProxyProgress, id).empty());
  Tick();
  Tick();  // nothing moved: nothing new
  auto p = RecordsOf(OpType::kProxyProgress, id);
  ASSERT_EQ(p.size(), 1u);
  EXPECT_EQ(p[0].seq, 1u);
  EXPECT_EQ(p[0].peer, 1);
  EXPECT_EQ(p[0].dtype, 3);                      // channel
  EXPECT_EQ(p[0].redop, 9);                      // SendWait: handed to the network, not completed
  EXPECT_EQ(p[0].count, uint64_t{1} << 32 | 0);  // posted 1, done 0
  EXPECT_EQ(p[0].aux, uint64_t{1} << 32 | 0);    // sent 1
  EXPECT_NE(p[0].group_id, 0u);                  // when SendWait was entered
  EXPECT_EQ(p[0].stream & trace::kProxySend, trace::kProxySend);
  EXPECT_EQ(p[0].stream & trace::kProxyEnded, 0u);
  EXPECT_EQ(p[0].stream >> 32, static_cast<uint64_t>(OpType::kAllReduce));
  EXPECT_EQ((p[0].stream >> 8) & 0xFFFFFF, 4u);  // steps in all
  ncclProfiler_v5.stopEvent(s.step);
  ncclProfiler_v5.stopEvent(s.op);
  Tick();
  p = RecordsOf(OpType::kProxyProgress, id);
  ASSERT_EQ(p.size(), 2u);
  EXPECT_EQ(p[1].stream & trace::kProxyEnded, trace::kProxyEnded);
  EXPECT_EQ(p[1].count, uint64_t{1} << 32 | 1);  // its step done
}

TEST_F(ProfilerP2p, ProxyOperationEndedBetweenTicksWritesNothing) {
  const uint64_t id = NewComm(2, 0);
  float b[2] = {};
  ASSERT_EQ(ncclAllReduce(b, b, 2, ncclFloat32, ncclSum, comm_, nullptr), ncclSuccess);
  const StuckSend s = StartStuckSend(g_nccl.last_coll, 1, 0);
  ncclProfiler_v5.stopEvent(s.step);
  ncclProfiler_v5.stopEvent(s.op);
  Tick();
  Tick();
  EXPECT_TRUE(RecordsOf(OpType::kProxyProgress, id).empty());
}

TEST_F(ProfilerP2p, ProxyOperationOfAnotherProcessIsNotFollowed) {
  NewComm(2, 0);
  float b[2] = {};
  ASSERT_EQ(ncclAllReduce(b, b, 2, ncclFloat32, ncclSum, comm_, nullptr), ncclSuccess);
  abi::EventDescrV5 o{};
  o.type = abi::kProxyOp;
  o.parentObj = g_nccl.last_coll;
  o.proxyOp = {getpid() + 1, 0, 1, 4, 1 << 20, 1};  // PXN: progressed for another process
  EXPECT_EQ(Start5(o), nullptr);
}

TEST_F(ProfilerP2p, KernelChannelsNotAllStoppedArePublished) {
  const uint64_t id = NewComm(2, 0);
  float b[2] = {};
  ASSERT_EQ(ncclAllReduce(b, b, 2, ncclFloat32, ncclSum, comm_, nullptr), ncclSuccess);
  KernelChannel(g_nccl.last_coll, 0, true);
  KernelChannel(g_nccl.last_coll, 5, false);  // channel 5 never stops
  Tick();
  Tick();
  const auto k = RecordsOf(OpType::kKernelChannels, id);
  ASSERT_EQ(k.size(), 1u);
  EXPECT_EQ(k[0].seq, 1u);
  EXPECT_EQ(k[0].aux, (uint64_t{1} << 0) | (uint64_t{1} << 5));  // started
  EXPECT_EQ(k[0].count, uint64_t{1} << 0);                       // stopped
}

TEST(ProxyMask, SuspectSwitchesDetailOnAndOffKeepingOtherPluginsBits) {
  profiler::ResetMaskForTest();
  ncclUniqueId uid;  // the first interposed call creates the runtime (and its ring)
  ASSERT_EQ(ncclGetUniqueId(&uid), ncclSuccess);
  Runtime* rt = g_runtime.load();
  ASSERT_NE(rt, nullptr);
  ASSERT_NE(rt, kRuntimeOff);
  int mask = static_cast<int>(abi::kProxyStep);  // another plugin wants ProxyStep
  profiler::AttachMask(&mask, profiler::kWantedMaskV5, profiler::ProxyDetailMode::kSuspect,
                       *rt->ring);
  EXPECT_EQ(static_cast<uint64_t>(mask) & abi::kProxyOp, 0u);
  profiler::SetProxyDetail(true, *rt->ring);
  EXPECT_EQ(static_cast<uint64_t>(mask) & abi::kProxyOp, abi::kProxyOp);
  profiler::SetProxyDetail(false, *rt->ring);
  EXPECT_EQ(static_cast<uint64_t>(mask) & abi::kProxyOp, 0u);
  EXPECT_EQ(static_cast<uint64_t>(mask) & abi::kProxyStep, abi::kProxyStep);  // not ours
  EXPECT_EQ(static_cast<uint64_t>(mask) & profiler::kWantedMaskV5, profiler::kWantedMaskV5);
  int always = 0;
  profiler::ResetMaskForTest();
  profiler::AttachMask(&always, profiler::kWantedMaskV5, profiler::ProxyDetailMode::kAlways,
                       *rt->ring);
  EXPECT_EQ(static_cast<uint64_t>(always) & (abi::kProxyOp | abi::kProxyStep),
            abi::kProxyOp | abi::kProxyStep);
  profiler::SetProxyDetail(false, *rt->ring);  // not in suspect mode: stays on
  EXPECT_EQ(static_cast<uint64_t>(always) & abi::kProxyOp, abi::kProxyOp);
  profiler::ResetMaskForTest();
}

}  // namespace
}  // namespace ncclscope::plugin

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  ncclscope::testing::TempDir dir;
  ncclscope::plugin::g_dir = &dir;
  setenv("NCCLSCOPE_DIR", dir.path().c_str(), 1);
  setenv("NCCLSCOPE_CUDA_LIBRARY", FAKE_CUDA_LIBRARY, 1);
  setenv("NCCLSCOPE_HEARTBEAT_MS", "60000", 1);
  setenv("NCCLSCOPE_WATCHDOG", "0", 1);
  return RUN_ALL_TESTS();
}
