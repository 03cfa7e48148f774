// Plugin-only recording of NCCL's proxy progress (NCCL_PROFILER_PLUGIN without LD_PRELOAD): the
// proxy_progress and kernel_channels records the interposed mode writes (profiler_p2p_test.cpp),
// written from the profiler's events alone, each known by its whole API call. The event orders are
// NCCL 2.28.9's: src/proxy.cc (ProxyAppend) and src/transport/net.cc (sendProxyProgress,
// recvProxyProgress: ncclProfilerStartProxyOpEvent with the Coll or P2p event's handle as parent
// and the proxy's pid, then ncclProfilerStartSendProxyStepEvent / RecvProxyStepEvent and their
// states), src/transport/profiler.cc (profilerProxyProgress: one KernelCh per channel, parent the
// Coll or P2p event, the KernelChStop state then the stop). An AlltoAll runs as Send/Recv parts,
// one P2p event each (src/enqueue.cc, taskAppend -> p2pTaskAppend), so its proxy ops' parents are
// the parts' P2p handles. The background thread's ticks are called here (PublishProgress), its own
// first publishing being a heartbeat period (60 s here) away.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <vector>

#include "../trace/temp_dir.h"
#include "plugin/core/profiler_abi.h"
#include "plugin/nvtx/nvtx_nccl_payload_calls.h"
#include "plugin/profiler/proxy_progress.h"
#include "plugin/runtime/runtime.h"
#include "tests/plugin/nccl_nvtx_payloads.h"
#include "tests/plugin/own_ring.h"
#include "trace/ring_reader.h"

extern "C" const ncclscope::plugin::prof_abi::TableV5 ncclProfiler_v5;

namespace ncclscope::plugin {
namespace {

namespace abi = prof_abi;
using trace::OpType;

ncclscope::testing::TempDir* g_dir = nullptr;
constexpr int kGroupStartApiStop = 23;
constexpr int kGroupEndApiStart = 24;
constexpr int kSendGpuWait = 8;
constexpr int kSendWait = 9;
constexpr int kSendPeerWait = 20;

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

void* Start(void* ctx, const abi::EventDescrV5& e) {
  void* h = nullptr;
  EXPECT_EQ(ncclProfiler_v5.startEvent(ctx, &h, const_cast<abi::EventDescrV5*>(&e)), ncclSuccess);
  return h;
}
void State(void* h, int state) {
  abi::StateArgsV4 args{};
  if (h != nullptr) ncclProfiler_v5.recordEventState(h, state, &args);
}
void Stop(void* h) {
  if (h != nullptr) ncclProfiler_v5.stopEvent(h);
}

// One v5 communicator recorded plugin-only.
struct Comm {
  void* ctx = nullptr;
  int mask = 0;
  int rank = 0;
  int nranks = 0;
  Comm(uint64_t hash, int nranks_in, int rank_in) : rank(rank_in), nranks(nranks_in) {
    EXPECT_EQ(ncclProfiler_v5.init(&ctx, hash, &mask, "px", 1, nranks, rank, nullptr), ncclSuccess);
  }
  void* GroupApi() const {
    abi::EventDescrV5 e{};
    e.type = abi::kGroupApi;
    e.groupApi.groupDepth = 1;
    void* g = Start(ctx, e);
    State(g, kGroupStartApiStop);
    return g;
  }
  // An ungrouped AllReduce, launched: its Coll event's handle.
  void* AllReduce() const {
    void* g = GroupApi();
    abi::EventDescrV5 a{};
    a.type = abi::kCollApi;
    a.parentObj = g;
    a.collApi = {"AllReduce", 4, "ncclFloat32", 0, nullptr, false};
    void* api = Start(ctx, a);
    Stop(api);
    State(g, kGroupEndApiStart);
    abi::EventDescrV5 c{};
    c.type = abi::kColl;
    c.parentObj = api;
    c.rank = rank;
    c.coll.func = "AllReduce";
    c.coll.nChannels = 2;
    void* coll = Start(ctx, c);
    Stop(coll);
    Stop(g);
    return coll;
  }
  // An ungrouped AlltoAll inside NCCL's NVTX range (the parts join one call): the parts' P2p
  // handles, in taskAppend's order (Send then Recv to each rank).
  std::vector<void*> AlltoAll(uint64_t hash, size_t count) const {
    nccl_nvtx::Push<nccl_nvtx::CommBytes> range(nccl_nvtx::kAlltoAll, {hash, count * 4});
    void* g = GroupApi();
    NcclRangePush(&range.attr);
    std::vector<std::pair<void*, int>> apis;
    for (int r = 0; r < nranks; ++r) {
      for (const char* func : {"Send", "Recv"}) {
        abi::EventDescrV5 e{};
        e.type = abi::kP2pApi;
        e.parentObj = g;
        e.p2pApi = {func, count, "ncclFloat32", nullptr, false};
        void* api = Start(ctx, e);
        Stop(api);
        apis.emplace_back(api, r);
      }
    }
    NcclRangePop();
    State(g, kGroupEndApiStart);
    std::vector<void*> tasks;
    for (size_t i = 0; i < apis.size(); ++i) {
      abi::EventDescrV5 e{};
      e.type = abi::kP2p;
      e.parentObj = apis[i].first;
      e.rank = rank;
      e.p2p.func = i % 2 == 0 ? "Send" : "Recv";
      e.p2p.peer = apis[i].second;
      e.p2p.nChannels = 1;
      tasks.push_back(Start(ctx, e));
      Stop(tasks.back());
    }
    Stop(g);
    return tasks;
  }
};

// One network send: ProxyOp, one step stuck in SendWait (isend posted, the network never
// completes it), as net.cc sendProxyProgress records it.
struct StuckSend {
  void* op = nullptr;
  void* step = nullptr;
};
StuckSend StartStuckSend(void* ctx, void* task, int peer, int channel, pid_t pid = getpid()) {
  StuckSend s;
  abi::EventDescrV5 o{};
  o.type = abi::kProxyOp;
  o.parentObj = task;
  o.proxyOp = {pid, static_cast<uint8_t>(channel), peer, 4, 1 << 20, 1};
  s.op = Start(ctx, o);
  if (s.op == nullptr) return s;
  abi::EventDescrV5 st{};
  st.type = abi::kProxyStep;
  st.parentObj = s.op;
  st.proxyStep.step = 0;
  s.step = Start(ctx, st);
  State(s.step, kSendGpuWait);
  State(s.step, kSendPeerWait);
  State(s.step, kSendWait);
  return s;
}

TEST(PluginOnlyProxy, ProxyDetailIsAskedForAsInTheInterposedMode) {
  Comm n(0x9a01, 2, 0);  // NCCLSCOPE_PROFILER_PROXY=always (main)
  const auto m = static_cast<uint64_t>(static_cast<unsigned>(n.mask));
  EXPECT_EQ(m & (abi::kProxyOp | abi::kProxyStep), abi::kProxyOp | abi::kProxyStep);
  EXPECT_EQ(m & abi::kGroupApi, abi::kGroupApi);
}

TEST(PluginOnlyProxy, ProxyOpOfACollectiveInFlightAcrossATickIsPublished) {
  constexpr uint64_t kComm = 0x9a02;
  Comm n(kComm, 2, 0);
  n.AllReduce();
  void* coll = n.AllReduce();  // the communicator's collective #2
  const StuckSend s = StartStuckSend(n.ctx, coll, 1, 3);
  ASSERT_NE(s.op, nullptr);
  ASSERT_NE(s.step, nullptr);
  Tick();  // first sight: it may yet end before the next tick
  EXPECT_TRUE(RecordsOf(OpType::kProxyProgress, kComm).empty());
  Tick();
  auto p = RecordsOf(OpType::kProxyProgress, kComm);
  ASSERT_EQ(p.size(), 1u);
  EXPECT_EQ(p[0].seq, 2u);
  EXPECT_EQ(p[0].stream >> 32, static_cast<uint64_t>(OpType::kAllReduce));
  EXPECT_EQ(p[0].peer, 1);
  EXPECT_EQ(p[0].dtype, 3);                      // channel
  EXPECT_EQ(p[0].redop, kSendWait);              // handed to the network, not completed
  EXPECT_EQ(p[0].count, uint64_t{1} << 32 | 0);  // posted 1, done 0
  EXPECT_EQ(p[0].stream & trace::kProxySend, trace::kProxySend);
  EXPECT_EQ((p[0].stream >> 8) & 0xFFFFFF, 4u);  // steps in all
  Stop(s.step);
  Stop(s.op);
  Tick();
  p = RecordsOf(OpType::kProxyProgress, kComm);
  ASSERT_EQ(p.size(), 2u);
  EXPECT_EQ(p[1].stream & trace::kProxyEnded, trace::kProxyEnded);
  EXPECT_EQ(p[1].count, uint64_t{1} << 32 | 1);  // its step done
}

// The interposed mode numbers an AlltoAll's parts with the call's number and OpType
// (profiler_plugin.cpp, kP2p): so does the plugin-only recorder, from the parts' whole call.
TEST(PluginOnlyProxy, ProxyOpOfAnAlltoAllPartCarriesTheCallsNumberAndOp) {
  constexpr uint64_t kComm = 0x9a03;
  Comm n(kComm, 2, 0);
  n.AllReduce();
  const std::vector<void*> parts = n.AlltoAll(kComm, 8);
  ASSERT_EQ(parts.size(), 4u);
  ASSERT_EQ(RecordsOf(OpType::kAlltoAll, kComm).size(), 1u);
  ASSERT_EQ(RecordsOf(OpType::kAlltoAll, kComm)[0].seq, 2u);
  const StuckSend s = StartStuckSend(n.ctx, parts[2], 1, 0);  // the Send to rank 1
  ASSERT_NE(s.op, nullptr);
  Tick();
  Tick();
  const auto p = RecordsOf(OpType::kProxyProgress, kComm);
  ASSERT_EQ(p.size(), 1u);
  EXPECT_EQ(p[0].seq, 2u);
  EXPECT_EQ(p[0].stream >> 32, static_cast<uint64_t>(OpType::kAlltoAll));
  EXPECT_EQ(p[0].peer, 1);
  Stop(s.step);
  Stop(s.op);
  Tick();
}

TEST(PluginOnlyProxy, ProxyOpOfAnotherProcessIsNotFollowed) {
  Comm n(0x9a04, 2, 0);
  void* coll = n.AllReduce();
  const StuckSend s = StartStuckSend(n.ctx, coll, 1, 0, getpid() + 1);  // PXN
  EXPECT_EQ(s.op, nullptr);
}

TEST(PluginOnlyProxy, ProxyOpEndedBeforeTheSecondTickWritesNothing) {
  constexpr uint64_t kComm = 0x9a05;
  Comm n(kComm, 2, 0);
  void* coll = n.AllReduce();
  const StuckSend s = StartStuckSend(n.ctx, coll, 1, 0);
  ASSERT_NE(s.op, nullptr);
  Tick();
  Stop(s.step);
  Stop(s.op);
  Tick();
  Tick();
  EXPECT_TRUE(RecordsOf(OpType::kProxyProgress, kComm).empty());
}

TEST(PluginOnlyProxy, KernelChannelsNotAllStoppedArePublishedAndCompletionStillStamped) {
  constexpr uint64_t kComm = 0x9a06;
  Comm n(kComm, 2, 0);
  void* coll = n.AllReduce();
  std::vector<void*> channels;
  for (uint8_t ch : {0, 5}) {
    abi::EventDescrV5 e{};
    e.type = abi::kKernelCh;
    e.parentObj = coll;
    e.kernelCh = {ch, 7000u};
    channels.push_back(Start(n.ctx, e));
  }
  State(channels[0], abi::kStateKernelChStop);
  Stop(channels[0]);
  Tick();
  Tick();
  const auto k = RecordsOf(OpType::kKernelChannels, kComm);
  ASSERT_EQ(k.size(), 1u);
  EXPECT_EQ(k[0].seq, 1u);
  EXPECT_EQ(k[0].peer, -1);
  EXPECT_EQ(k[0].stream >> 32, static_cast<uint64_t>(OpType::kAllReduce));
  EXPECT_EQ(k[0].aux, (uint64_t{1} << 0) | (uint64_t{1} << 5));  // started
  EXPECT_EQ(k[0].count, uint64_t{1} << 0);                       // stopped
  EXPECT_TRUE(trace::IsPending(RecordsOf(OpType::kAllReduce, kComm)[0].t_device_done_ns));
  State(channels[1], abi::kStateKernelChStop);
  Stop(channels[1]);
  EXPECT_FALSE(trace::IsPending(RecordsOf(OpType::kAllReduce, kComm)[0].t_device_done_ns));
}

}  // namespace
}  // namespace ncclscope::plugin

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  ncclscope::testing::TempDir dir;
  ncclscope::plugin::g_dir = &dir;
  setenv("NCCLSCOPE_DIR", dir.path().c_str(), 1);
  setenv("NCCLSCOPE_HEARTBEAT_MS", "60000", 1);
  setenv("NCCLSCOPE_WATCHDOG", "0", 1);
  setenv("NCCLSCOPE_PROFILER_PROXY", "always", 1);
  return RUN_ALL_TESTS();
}
