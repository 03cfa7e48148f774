// The profiler-v4 call log (plugin/runtime/v4_call_log.h): an event launched outside its call finds
// the call's number by its arguments, in whatever order NCCL launches a group's tasks.
#include "plugin/runtime/v4_call_log.h"

#include <gtest/gtest.h>

#include <atomic>
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <vector>

namespace ncclscope::plugin {
namespace {

using trace::OpType;

// NCCL 2.28.9's descriptor of a Coll event for the task collTaskAppend made of a call.
prof_abi::CollV4 CollEvent(const char* func, const void* send, void* recv, size_t count,
                           const char* datatype, int root = 0) {
  prof_abi::CollV4 c{};
  c.func = func;
  c.sendBuff = send;
  c.recvBuff = recv;
  c.count = count;
  c.datatype = datatype;
  c.root = root;
  return c;
}

TEST(V4CallLog, EventsInNcclsPlanOrderFindTheirCallsNumbers) {
  V4CallLog log;
  float a[64] = {}, b[256] = {}, c[16] = {};
  // A group of three AllReduces, numbered 7, 8, 9 in call order.
  log.Add(CollectiveCallKey(OpType::kAllReduce, a, a, 64, ncclFloat32, -1), 7);
  log.Add(CollectiveCallKey(OpType::kAllReduce, b, b, 256, ncclFloat32, -1), 8);
  log.Add(CollectiveCallKey(OpType::kAllReduce, c, c, 16, ncclFloat32, -1), 9);
  // NCCL launches them largest first (src/enqueue.cc ncclTaskCollSorterInsert by traffic bytes).
  EXPECT_EQ(log.Claim(CollEventKey(CollEvent("AllReduce", b, b, 256, "ncclFloat32"))), 8u);
  EXPECT_EQ(log.Claim(CollEventKey(CollEvent("AllReduce", a, a, 64, "ncclFloat32"))), 7u);
  EXPECT_EQ(log.Claim(CollEventKey(CollEvent("AllReduce", c, c, 16, "ncclFloat32"))), 9u);
  // Each call is claimed once: a second event with the same arguments finds nothing.
  EXPECT_EQ(log.Claim(CollEventKey(CollEvent("AllReduce", a, a, 64, "ncclFloat32"))), 0u);
}

TEST(V4CallLog, TheSameBufferEveryStepIsClaimedOldestFirst) {
  V4CallLog log;
  float grad[32] = {};
  for (uint64_t seq = 1; seq <= 3; ++seq)
    log.Add(CollectiveCallKey(OpType::kAllReduce, grad, grad, 32, ncclFloat32, -1), seq);
  const auto key = CollEventKey(CollEvent("AllReduce", grad, grad, 32, "ncclFloat32"));
  EXPECT_EQ(log.Claim(key), 1u);
  EXPECT_EQ(log.Claim(key), 2u);
  EXPECT_EQ(log.Claim(key), 3u);
}

TEST(V4CallLog, AllGatherAndBroadcastAreCountedInBytesAsNcclsTasks) {
  V4CallLog log;
  uint16_t send[8] = {}, recv[32] = {};
  log.Add(CollectiveCallKey(OpType::kAllGather, send, recv, 8, ncclBfloat16, -1), 3);
  log.Add(CollectiveCallKey(OpType::kBroadcast, recv, recv, 32, ncclFloat16, 2), 4);
  // collTaskAppend: count *= element size, datatype ncclInt8.
  EXPECT_EQ(log.Claim(CollEventKey(CollEvent("Broadcast", recv, recv, 64, "ncclInt8", 2))), 4u);
  EXPECT_EQ(log.Claim(CollEventKey(CollEvent("AllGather", send, recv, 8, "ncclBfloat16"))), 0u);
  EXPECT_EQ(log.Claim(CollEventKey(CollEvent("AllGather", send, recv, 16, "ncclInt8"))), 3u);
}

TEST(V4CallLog, EveryArgumentMustAgree) {
  V4CallLog log;
  float x[16] = {}, y[16] = {};
  log.Add(CollectiveCallKey(OpType::kReduce, x, y, 16, ncclFloat32, 1), 5);
  EXPECT_EQ(log.Claim(CollEventKey(CollEvent("Reduce", x, y, 16, "ncclFloat32", 0))), 0u);  // root
  EXPECT_EQ(log.Claim(CollEventKey(CollEvent("Reduce", y, y, 16, "ncclFloat32", 1))), 0u);  // send
  EXPECT_EQ(log.Claim(CollEventKey(CollEvent("Reduce", x, x, 16, "ncclFloat32", 1))), 0u);  // recv
  EXPECT_EQ(log.Claim(CollEventKey(CollEvent("Reduce", x, y, 8, "ncclFloat32", 1))), 0u);   // count
  EXPECT_EQ(log.Claim(CollEventKey(CollEvent("Reduce", x, y, 16, "ncclFloat64", 1))), 0u);  // type
  EXPECT_EQ(log.Claim(CollEventKey(CollEvent("AllReduce", x, y, 16, "ncclFloat32", 1))), 0u);
  // NCCL 2.28.9 names ncclUint8 "Unknown": an unknown type name matches any.
  EXPECT_EQ(log.Claim(CollEventKey(CollEvent("Reduce", x, y, 16, "Unknown", 1))), 5u);
}

TEST(V4CallLog, SendsAndReceivesMatchByPeerDirectionBufferAndCount) {
  V4CallLog log;
  char buf[4][128] = {};
  // A pipeline group: send to 1 and receive from 3 (numbers per peer and direction).
  log.Add(P2pCallKey(true, buf[0], 128, ncclInt8, 1), 4);
  log.Add(P2pCallKey(false, buf[1], 128, ncclInt8, 3), 9);
  log.Add(P2pCallKey(true, buf[2], 64, ncclInt8, 3), 2);
  // NCCL's p2p schedule launches the peer-3 round first; its send before its receive.
  EXPECT_EQ(log.Claim(P2pEventKey("Send", buf[2], "ncclInt8", 64, 3)), 2u);
  EXPECT_EQ(log.Claim(P2pEventKey("Recv", buf[1], "ncclInt8", 128, 3)), 9u);
  EXPECT_EQ(log.Claim(P2pEventKey("Recv", buf[0], "ncclInt8", 128, 1)), 0u);  // direction
  EXPECT_EQ(log.Claim(P2pEventKey("Send", buf[0], "ncclInt8", 128, 2)), 0u);  // peer
  EXPECT_EQ(log.Claim(P2pEventKey("Send", buf[0], "ncclInt8", 128, 1)), 4u);
  // Other P2p functions (the parts of NCCL-internal work) are never claimed.
  EXPECT_EQ(log.Claim(P2pEventKey("PutSignal", buf[0], "ncclInt8", 128, 1)), 0u);
}

// The names are read through a cache keyed by pointer (NCCL passes string literals): names at
// other addresses, many of them sharing cache slots, still read by their content.
TEST(V4CallLog, EventNamesReadByContentAtAnyAddress) {
  std::vector<std::string> names;
  for (int i = 0; i < 40; ++i) names.push_back(i % 2 == 0 ? "ncclFloat32" : "ncclBfloat16");
  names.emplace_back("Unknown");
  float x[4] = {};
  for (int round = 0; round < 2; ++round) {
    for (size_t i = 0; i < names.size(); ++i) {
      const int32_t want = i + 1 == names.size() ? -1 : i % 2 == 0 ? ncclFloat32 : ncclBfloat16;
      EXPECT_EQ(CollEventKey(CollEvent("AllReduce", x, x, 4, names[i].c_str())).dtype, want) << i;
    }
  }
  const std::string send = "Send", recv = "Recv";
  EXPECT_EQ(P2pEventKey(send.c_str(), x, "ncclInt8", 1, 0).op, uint32_t(OpType::kSend));
  EXPECT_EQ(P2pEventKey(recv.c_str(), x, "ncclInt8", 1, 0).op, uint32_t(OpType::kRecv));
  EXPECT_EQ(P2pEventKey(nullptr, x, "ncclInt8", 1, 0).op, 0u);
}

TEST(V4CallLog, ACancelledCallIsNeverClaimed) {
  V4CallLog log;
  float x[4] = {};
  const auto key = CollectiveCallKey(OpType::kAllReduce, x, x, 4, ncclFloat32, -1);
  const uint64_t refused = log.Add(key, 1);
  log.Cancel(refused);  // NCCL refused it: the same call again takes number 1
  log.Add(key, 1);
  log.Cancel(V4CallLog::kNoEntry);
  EXPECT_EQ(log.Claim(CollEventKey(CollEvent("AllReduce", x, x, 4, "ncclFloat32"))), 1u);
  EXPECT_EQ(log.Claim(CollEventKey(CollEvent("AllReduce", x, x, 4, "ncclFloat32"))), 0u);
}

TEST(V4CallLog, CallsOlderThanTheWindowAreForgotten) {
  V4CallLog log;
  std::vector<float> bufs(V4CallLog::kEntries + 8);
  for (uint64_t i = 0; i < bufs.size(); ++i)
    log.Add(CollectiveCallKey(OpType::kAllReduce, &bufs[i], &bufs[i], 1, ncclFloat32, -1), i + 1);
  // The first 8 were overwritten: their events read as unknown; the rest are still found.
  EXPECT_EQ(log.Claim(CollEventKey(CollEvent("AllReduce", &bufs[0], &bufs[0], 1, "ncclFloat32"))),
            0u);
  EXPECT_EQ(log.Claim(CollEventKey(CollEvent("AllReduce", &bufs[7], &bufs[7], 1, "ncclFloat32"))),
            0u);
  for (uint64_t i = 8; i < bufs.size(); ++i) {
    EXPECT_EQ(log.Claim(CollEventKey(CollEvent("AllReduce", &bufs[i], &bufs[i], 1, "ncclFloat32"))),
              i + 1);
  }
}

// Events of one plan claimed by several threads at once (NCCL's launching thread and a
// host-callback thread of another plan) while the issuing thread keeps logging: every call is
// claimed exactly once, each by an event with its arguments.
TEST(V4CallLog, ConcurrentClaimsTakeEachCallOnce) {
  auto log = std::make_unique<V4CallLog>();
  constexpr int kCalls = 4000;
  constexpr int kClaimers = 3;
  static float bufs[8];
  std::atomic<uint64_t> logged{0};
  std::vector<std::vector<uint64_t>> claimed(kClaimers);
  std::atomic<bool> done{false};
  std::thread writer([&] {
    for (int i = 0; i < kCalls; ++i) {
      // At most 8 calls unclaimed: every claimer asks for each buffer every 8 tries, so no call
      // is overwritten before it is claimed (the window holds 64).
      while (logged.load() >= 8) std::this_thread::yield();
      float* b = &bufs[i % 8];
      log->Add(CollectiveCallKey(OpType::kAllReduce, b, b, 1, ncclFloat32, -1), i + 1);
      logged.fetch_add(1);
    }
    done.store(true);
  });
  std::vector<std::thread> claimers;
  for (int t = 0; t < kClaimers; ++t) {
    claimers.emplace_back([&, t] {
      for (int i = 0;; ++i) {
        float* b = &bufs[(i + t) % 8];
        const uint64_t seq =
            log->Claim(CollEventKey(CollEvent("AllReduce", b, b, 1, "ncclFloat32")));
        if (seq != 0) {
          EXPECT_EQ(static_cast<int>((seq - 1) % 8), (i + t) % 8) << "claimed by wrong arguments";
          claimed[t].push_back(seq);
          logged.fetch_sub(1);
        } else if (done.load() && logged.load() == 0) {
          return;
        }
      }
    });
  }
  writer.join();
  for (std::thread& c : claimers) c.join();
  std::set<uint64_t> all;
  size_t total = 0;
  for (const auto& v : claimed) {
    total += v.size();
    all.insert(v.begin(), v.end());
  }
  EXPECT_EQ(total, static_cast<size_t>(kCalls));
  EXPECT_EQ(all.size(), static_cast<size_t>(kCalls));
}

}  // namespace
}  // namespace ncclscope::plugin
