// Plugin-only recording of AlltoAll, Gather and Scatter as one collective each. The order is NCCL
// 2.28.9's: the API function pushes its NVTX range first (src/collectives.cc, ncclAlltoAll /
// ncclGather / ncclScatter: NVTX3_FUNC_WITH_PARAMS, bytes = count x type size), then
// ncclEnqueueCheck -> taskAppend appends the call as p2pTaskAppend parts (src/enqueue.cc: AlltoAll
// Send then Recv for r = 0..nranks-1; Gather its Send to the root, then at the root a Recv from
// each rank; Scatter at the root a Send to each rank, then its Recv from the root), each opening
// GroupApi only for the outermost group and a P2pApi named "Send"/"Recv" with the user's count,
// stopped inside p2pTaskAppend; the range is popped when the function returns. At group end each
// part's P2p event (parent: its P2pApi, with the peer), then one KernelCh per channel
// (src/plugin/profiler.cc, ncclProfilerStartTaskEvents, ncclProfilerStart/StopKernelChEvent).
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

namespace ncclscope::plugin {
namespace {

namespace abi = prof_abi;
using nccl_nvtx::CommBytes;
using nccl_nvtx::CommBytesInt;
using nccl_nvtx::Push;
using trace::OpType;
namespace sid = nccl_nvtx;

ncclscope::testing::TempDir* g_dir = nullptr;
constexpr int kGroupStartApiStop = 23;
constexpr int kGroupEndApiStart = 24;

std::vector<trace::RecordData> RecordsOf(OpType op, uint64_t comm_id) {
  return ncclscope::testing::RecordsOf(g_dir->path(), op, comm_id);
}

struct Part {
  void* api = nullptr;
  const char* func = nullptr;
  int peer = -1;
  void* task = nullptr;  // its P2p event's handle, once launched
};

// One v5 communicator, and the events of its calls as NCCL emits them.
struct V5 {
  void* ctx = nullptr;
  int rank = 0;
  int nranks = 0;
  V5(uint64_t hash, int nranks_in, int rank_in) : rank(rank_in), nranks(nranks_in) {
    int mask = 0;
    EXPECT_EQ(ncclProfiler_v5.init(&ctx, hash, &mask, "ep", 1, nranks, rank, nullptr), ncclSuccess);
  }
  void* Start(const abi::EventDescrV5& e) const {
    void* h = nullptr;
    ncclProfiler_v5.startEvent(ctx, &h, const_cast<abi::EventDescrV5*>(&e));
    return h;
  }
  static void State(void* h, int state) {
    abi::StateArgsV4 args{};
    if (h != nullptr) ncclProfiler_v5.recordEventState(h, state, &args);
  }
  static void Stop(void* h) {
    if (h != nullptr) ncclProfiler_v5.stopEvent(h);
  }
  void* GroupApi(int depth) const {
    abi::EventDescrV5 e{};
    e.type = abi::kGroupApi;
    e.groupApi.groupDepth = depth;
    void* g = Start(e);
    State(g, kGroupStartApiStop);
    return g;
  }
  // p2pTaskAppend: one part's P2pApi, started and stopped; the peer is known to NCCL only.
  Part P2pApi(void* group, const char* func, int peer, size_t count) const {
    abi::EventDescrV5 e{};
    e.type = abi::kP2pApi;
    e.parentObj = group;
    e.p2pApi = {func, count, "ncclFloat32", nullptr, false};
    Part p{Start(e), func, peer, nullptr};
    Stop(p.api);
    return p;
  }
  // taskAppend's parts of one call, inside `range` when given (the injection's NCCL-domain push).
  std::vector<Part> Call(const nvtxEventAttributes_t* range, void* group, OpType op, int root,
                         size_t count) const {
    if (range != nullptr) NcclRangePush(range);
    std::vector<Part> parts;
    if (op == OpType::kAlltoAll) {
      for (int r = 0; r < nranks; ++r) {
        parts.push_back(P2pApi(group, "Send", r, count));
        parts.push_back(P2pApi(group, "Recv", r, count));
      }
    } else if (op == OpType::kGather) {
      parts.push_back(P2pApi(group, "Send", root, count));
      for (int r = 0; rank == root && r < nranks; ++r)
        parts.push_back(P2pApi(group, "Recv", r, count));
    } else {
      for (int r = 0; rank == root && r < nranks; ++r)
        parts.push_back(P2pApi(group, "Send", r, count));
      parts.push_back(P2pApi(group, "Recv", root, count));
    }
    if (range != nullptr) NcclRangePop();
    return parts;
  }
  // Group end: each part's P2p event with its peer.
  void Launch(std::vector<Part>& parts, int channels) const {
    for (Part& p : parts) {
      abi::EventDescrV5 e{};
      e.type = abi::kP2p;
      e.parentObj = p.api;
      e.rank = rank;
      e.p2p.func = p.func;
      e.p2p.peer = p.peer;
      e.p2p.nChannels = static_cast<uint8_t>(channels);
      p.task = Start(e);
      Stop(p.task);
    }
  }
  std::vector<void*> KernelStart(const Part& p, int channels) const {
    std::vector<void*> out;
    for (int ch = 0; ch < channels; ++ch) {
      abi::EventDescrV5 e{};
      e.type = abi::kKernelCh;
      e.parentObj = p.task;
      e.kernelCh = {static_cast<uint8_t>(ch), 9000u + static_cast<uint64_t>(ch)};
      out.push_back(Start(e));
    }
    return out;
  }
  static void KernelStop(void* channel) {
    State(channel, abi::kStateKernelChStop);
    Stop(channel);
  }
  // An ungrouped call: NCCL's implicit group of depth 1, launched before the call returns.
  std::vector<Part> Ungrouped(const nvtxEventAttributes_t* range, OpType op, int root, size_t count,
                              int channels) const {
    void* g = GroupApi(1);
    std::vector<Part> parts = Call(range, g, op, root, count);
    State(g, kGroupEndApiStart);
    Launch(parts, channels);
    Stop(g);
    return parts;
  }
  // An ungrouped call with the send buffer at the receive's place for the rank itself (in-place
  // AlltoAll; Gather or Scatter at the root): all parts are appended, but scheduleP2pTasksToPlan
  // frees the Send and Recv to self unplanned, so only the remote parts get a P2p event. Returns
  // those.
  std::vector<Part> UngroupedInPlace(const nvtxEventAttributes_t* range, OpType op, int root,
                                     size_t count, int channels) const {
    void* g = GroupApi(1);
    std::vector<Part> parts = Call(range, g, op, root, count);
    State(g, kGroupEndApiStart);
    std::vector<Part> remote;
    for (const Part& p : parts) {
      if (p.peer != rank) remote.push_back(p);
    }
    Launch(remote, channels);
    Stop(g);
    return remote;
  }
};

// Starts and stops every channel of the parts, the last channel of the last part held back;
// returns that one.
void* RunAllButOneChannel(const V5& n, const std::vector<Part>& parts, int channels) {
  void* held = nullptr;
  for (size_t i = 0; i < parts.size(); ++i) {
    std::vector<void*> ch = n.KernelStart(parts[i], channels);
    for (size_t c = 0; c < ch.size(); ++c) {
      if (i + 1 == parts.size() && c + 1 == ch.size()) {
        held = ch[c];
      } else {
        V5::KernelStop(ch[c]);
      }
    }
  }
  return held;
}

TEST(PluginOnlyParts, AlltoAllInsideItsRangeIsOneCollectiveCompletedByAllItsParts) {
  constexpr uint64_t kComm = 0xa2a1;
  V5 n(kComm, 3, 1);
  Push<CommBytes> range(sid::kAlltoAll, {kComm, size_t{8} * 4});  // 8 floats per peer
  std::vector<Part> parts = n.Ungrouped(&range.attr, OpType::kAlltoAll, -1, 8, 2);
  ASSERT_EQ(parts.size(), 6u);

  EXPECT_TRUE(RecordsOf(OpType::kSend, kComm).empty()) << "parts are no sends of their own";
  EXPECT_TRUE(RecordsOf(OpType::kRecv, kComm).empty());
  auto calls = RecordsOf(OpType::kAlltoAll, kComm);
  ASSERT_EQ(calls.size(), 1u);
  EXPECT_EQ(calls[0].seq, 1u);
  EXPECT_EQ(calls[0].count, 8u);  // the user's count, as the interposer records it
  EXPECT_EQ(calls[0].dtype, ncclFloat32);
  EXPECT_EQ(calls[0].peer, -1);
  EXPECT_NE(calls[0].group_id, 0u);
  EXPECT_LE(calls[0].t_enter_ns, calls[0].t_exit_ns);
  EXPECT_TRUE(trace::IsPending(calls[0].t_device_done_ns));

  // Kernels: the third part's channels start first; one device_start for the whole call.
  std::vector<std::vector<void*>> channels;
  for (size_t i : {2u, 0u, 1u, 3u, 4u, 5u}) channels.push_back(n.KernelStart(parts[i], 2));
  const auto markers = RecordsOf(OpType::kDeviceStart, kComm);
  ASSERT_EQ(markers.size(), 1u);
  EXPECT_EQ(markers[0].seq, 1u);
  EXPECT_EQ(markers[0].aux, 9000u);
  EXPECT_TRUE(RecordsOf(OpType::kP2pDeviceStart, kComm).empty());

  // Every channel of every part but the last one stopped: not done yet.
  for (size_t i = 0; i < channels.size(); ++i) {
    for (size_t ch = 0; ch < 2; ++ch) {
      if (i + 1 == channels.size() && ch == 1) continue;
      V5::KernelStop(channels[i][ch]);
    }
  }
  EXPECT_TRUE(trace::IsPending(RecordsOf(OpType::kAlltoAll, kComm)[0].t_device_done_ns));
  V5::KernelStop(channels.back()[1]);
  EXPECT_GE(RecordsOf(OpType::kAlltoAll, kComm)[0].t_device_done_ns, calls[0].t_exit_ns);
}

// NCCL 2.28.9 src/enqueue.cc, scheduleP2pTasksToPlan: "Skip send to self in-place": when the
// send to self has the receive's buffer (AlltoAll with sendbuff == recvbuff, every rank), both
// tasks are freed without being planned, so they never get a P2p event. The call still completes
// once its remote parts ran.
TEST(PluginOnlyParts, InPlaceAlltoAllCompletesWithoutItsUnlaunchedPartsToSelf) {
  constexpr uint64_t kComm = 0xa2a3;
  V5 n(kComm, 3, 1);
  Push<CommBytes> range(sid::kAlltoAll, {kComm, size_t{8} * 4});
  std::vector<Part> remote = n.UngroupedInPlace(&range.attr, OpType::kAlltoAll, -1, 8, 2);
  ASSERT_EQ(remote.size(), 4u);  // Send and Recv to ranks 0 and 2
  auto calls = RecordsOf(OpType::kAlltoAll, kComm);
  ASSERT_EQ(calls.size(), 1u);
  EXPECT_EQ(calls[0].seq, 1u);
  EXPECT_TRUE(RecordsOf(OpType::kSend, kComm).empty());

  void* last = RunAllButOneChannel(n, remote, 2);
  EXPECT_TRUE(trace::IsPending(RecordsOf(OpType::kAlltoAll, kComm)[0].t_device_done_ns));
  V5::KernelStop(last);
  EXPECT_GE(RecordsOf(OpType::kAlltoAll, kComm)[0].t_device_done_ns, calls[0].t_exit_ns);
}

// An out-of-place call's parts to self are launched (P2p events with their channel count) but
// report no kernel channel: src/enqueue.cc addP2pToPlan gives a send to self no proxy ops
// (nProxyOps = selfSend ? 0 : 2), hence no profiler proxy op (addProfilerProxyOpIfNeeded), the
// only source of KernelCh events (src/transport/profiler.cc, profilerProxyProgress).
TEST(PluginOnlyParts, OutOfPlaceAlltoAllCompletesWhenOnlyItsRemotePartsReportChannels) {
  constexpr uint64_t kComm = 0xa2a4;
  V5 n(kComm, 3, 2);
  Push<CommBytes> range(sid::kAlltoAll, {kComm, size_t{8} * 4});
  std::vector<Part> parts = n.Ungrouped(&range.attr, OpType::kAlltoAll, -1, 8, 2);
  ASSERT_EQ(parts.size(), 6u);
  std::vector<Part> remote;
  for (const Part& p : parts) {
    if (p.peer != 2) remote.push_back(p);
  }
  void* last = RunAllButOneChannel(n, remote, 2);
  EXPECT_TRUE(trace::IsPending(RecordsOf(OpType::kAlltoAll, kComm)[0].t_device_done_ns));
  V5::KernelStop(last);
  EXPECT_GT(RecordsOf(OpType::kAlltoAll, kComm)[0].t_device_done_ns, 0);
}

// In place at the root (Gather: sendbuff == recvbuff + root x part; Scatter: recvbuff ==
// sendbuff + root x part): the root's Send and Recv to itself are skipped as above.
TEST(PluginOnlyParts, InPlaceGatherAndScatterAtTheRootComplete) {
  constexpr uint64_t kComm = 0x6a8;
  V5 n(kComm, 3, 0);
  Push<CommBytesInt> gather(sid::kGather, {kComm, 4, 0});
  std::vector<Part> g = n.UngroupedInPlace(&gather.attr, OpType::kGather, 0, 1, 1);
  ASSERT_EQ(g.size(), 2u);  // the Recv from ranks 1 and 2
  Push<CommBytesInt> scatter(sid::kScatter, {kComm, 4, 0});
  std::vector<Part> s = n.UngroupedInPlace(&scatter.attr, OpType::kScatter, 0, 1, 1);
  ASSERT_EQ(s.size(), 2u);  // the Send to ranks 1 and 2
  ASSERT_EQ(RecordsOf(OpType::kGather, kComm).size(), 1u);
  ASSERT_EQ(RecordsOf(OpType::kScatter, kComm).size(), 1u);

  void* gather_last = RunAllButOneChannel(n, g, 1);
  void* scatter_last = RunAllButOneChannel(n, s, 1);
  EXPECT_TRUE(trace::IsPending(RecordsOf(OpType::kGather, kComm)[0].t_device_done_ns));
  EXPECT_TRUE(trace::IsPending(RecordsOf(OpType::kScatter, kComm)[0].t_device_done_ns));
  V5::KernelStop(gather_last);
  EXPECT_GT(RecordsOf(OpType::kGather, kComm)[0].t_device_done_ns, 0);
  EXPECT_TRUE(trace::IsPending(RecordsOf(OpType::kScatter, kComm)[0].t_device_done_ns));
  V5::KernelStop(scatter_last);
  EXPECT_GT(RecordsOf(OpType::kScatter, kComm)[0].t_device_done_ns, 0);
}

// Two calls in one user group (parts of both under the same GroupApi), then an AllReduce-like
// collective: the collective counter is shared, each call is one record.
TEST(PluginOnlyParts, CallsInOneUserGroupAreNumberedInOrder) {
  constexpr uint64_t kComm = 0xa2a2;
  V5 n(kComm, 2, 0);
  Push<CommBytes> a2a(sid::kAlltoAll, {kComm, size_t{16} * 4});
  Push<CommBytesInt> gather(sid::kGather, {kComm, size_t{16} * 4, 0});
  void* g = n.GroupApi(2);
  std::vector<Part> first = n.Call(&a2a.attr, g, OpType::kAlltoAll, -1, 16);
  std::vector<Part> second = n.Call(&a2a.attr, g, OpType::kAlltoAll, -1, 16);
  std::vector<Part> third = n.Call(&gather.attr, g, OpType::kGather, 0, 16);
  EXPECT_EQ(third.size(), 3u);  // the root: its Send, a Recv from each of 2 ranks
  V5::State(g, kGroupEndApiStart);
  n.Launch(first, 1);
  n.Launch(second, 1);
  n.Launch(third, 1);
  V5::Stop(g);

  const auto a2as = RecordsOf(OpType::kAlltoAll, kComm);
  ASSERT_EQ(a2as.size(), 2u);
  EXPECT_EQ(a2as[0].seq, 1u);
  EXPECT_EQ(a2as[1].seq, 2u);
  EXPECT_NE(a2as[0].flags & trace::kFlagInGroup, 0u);
  const auto gathers = RecordsOf(OpType::kGather, kComm);
  ASSERT_EQ(gathers.size(), 1u);
  EXPECT_EQ(gathers[0].seq, 3u);
  EXPECT_EQ(gathers[0].peer, 0);  // the root
  EXPECT_TRUE(RecordsOf(OpType::kSend, kComm).empty());

  // Only the second call's kernels ran: only it completes.
  for (const Part& p : second) V5::KernelStop(n.KernelStart(p, 1)[0]);
  EXPECT_TRUE(trace::IsPending(RecordsOf(OpType::kAlltoAll, kComm)[0].t_device_done_ns));
  EXPECT_GT(RecordsOf(OpType::kAlltoAll, kComm)[1].t_device_done_ns, 0);
}

TEST(PluginOnlyParts, GatherAndScatterAwayFromTheRootHaveOnePart) {
  constexpr uint64_t kComm = 0x6a7;
  V5 n(kComm, 4, 2);
  Push<CommBytesInt> gather(sid::kGather, {kComm, 4, 3});
  Push<CommBytesInt> scatter(sid::kScatter, {kComm, 4, 3});
  std::vector<Part> g = n.Ungrouped(&gather.attr, OpType::kGather, 3, 1, 1);
  std::vector<Part> s = n.Ungrouped(&scatter.attr, OpType::kScatter, 3, 1, 1);
  ASSERT_EQ(g.size(), 1u);
  ASSERT_EQ(s.size(), 1u);
  const auto gathers = RecordsOf(OpType::kGather, kComm);
  const auto scatters = RecordsOf(OpType::kScatter, kComm);
  ASSERT_EQ(gathers.size(), 1u);
  ASSERT_EQ(scatters.size(), 1u);
  EXPECT_EQ(gathers[0].seq, 1u);
  EXPECT_EQ(scatters[0].seq, 2u);
  EXPECT_EQ(scatters[0].peer, 3);
  V5::KernelStop(n.KernelStart(s[0], 1)[0]);
  EXPECT_GT(RecordsOf(OpType::kScatter, kComm)[0].t_device_done_ns, 0);
}

// Without a matching range the parts stay per-peer sends and receives, as before.
TEST(PluginOnlyParts, WithoutAMatchingRangeThePartsStaySendsAndReceives) {
  constexpr uint64_t kComm = 0x5e4d;
  V5 n(kComm, 2, 0);
  n.Ungrouped(nullptr, OpType::kAlltoAll, -1, 4, 1);  // NVTX not injected, NCCL_NVTX_DISABLE=1
  Push<CommBytes> other_comm(sid::kAlltoAll, {0x0bad, size_t{4} * 4});
  n.Ungrouped(&other_comm.attr, OpType::kAlltoAll, -1, 4, 1);
  Push<CommBytes> other_size(sid::kAlltoAll, {kComm, size_t{4} * 8});  // not this call's bytes
  n.Ungrouped(&other_size.attr, OpType::kAlltoAll, -1, 4, 1);
  EXPECT_TRUE(RecordsOf(OpType::kAlltoAll, kComm).empty());
  const auto sends = RecordsOf(OpType::kSend, kComm);
  ASSERT_EQ(sends.size(), 6u);  // 3 calls x 2 peers
  EXPECT_EQ(sends.back().seq, 3u);
}

// A user's ncclSend is inside its own "Send" range: never taken for a part of anything.
TEST(PluginOnlyParts, AUsersSendStaysASend) {
  constexpr uint64_t kComm = 0x5e4e;
  V5 n(kComm, 2, 0);
  Push<CommBytesInt> send(sid::kSend, {kComm, size_t{4} * 4, 1});
  void* g = n.GroupApi(1);
  NcclRangePush(&send.attr);
  std::vector<Part> parts{n.P2pApi(g, "Send", 1, 4)};
  NcclRangePop();
  n.Launch(parts, 1);
  V5::Stop(g);
  ASSERT_EQ(RecordsOf(OpType::kSend, kComm).size(), 1u);
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
