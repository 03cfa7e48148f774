// The exchange kernel's CPU twin (exchange_twin.h) run by one thread per rank over memory they all
// see, as the emulator's rank processes run it over shared memory: grouped sends and receives of
// unequal sizes (all-to-all(v)), each rank's ops in its own order, parts of one chunk and of many,
// receive buffers poisoned before each group, chunk counters across their wrap; a rank that never
// arrives makes its peers' waits expire, naming it and the flag.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <map>
#include <memory>
#include <random>
#include <thread>
#include <vector>

#include "collectives/planner/exchange_plan.h"
#include "collectives/twins/exchange_twin.h"
#include "tests/collectives/twin_clock.h"

namespace ncclscope::collectives {
namespace {

// A communicator's registered memory, in one process, and each rank's chunk counters per pair.
struct Comm {
  int n;
  size_t slot_bytes, sub_bytes;
  uint32_t blocks_per_part;
  std::vector<std::vector<unsigned char>> staging;
  std::vector<std::unique_ptr<Signal>> signal;
  // sent[r][q]: chunks r has sent q so far; received[r][q]: chunks r took from q.
  std::vector<std::vector<uint32_t>> sent, received;

  Comm(int nranks, size_t slot, uint32_t blocks, uint32_t first_counter)
      : n(nranks), slot_bytes(slot), sub_bytes(slot / blocks), blocks_per_part(blocks) {
    for (int r = 0; r < n; ++r) {
      staging.emplace_back(slot * kExchangeSlotsPerPeer * static_cast<size_t>(n));
      signal.push_back(std::make_unique<Signal>());
      // Flags and counters start where earlier exchanges of the communicator left them.
      for (uint32_t b = 0; b < kMaxBlocks; ++b) {
        for (int q = 0; q < kMaxRanks; ++q) {
          *FlagOf(signal.back().get(), b, Barrier::kChunkReady, q) = first_counter;
          *FlagOf(signal.back().get(), b, Barrier::kSlotFree, q) = first_counter;
        }
      }
    }
    sent.assign(static_cast<size_t>(n),
                std::vector<uint32_t>(static_cast<size_t>(n), first_counter));
    received = sent;
  }
};

struct Op {
  int peer;
  bool send;
  std::vector<unsigned char> data;  // a send's bytes; a receive's buffer
};

// Rank r's share of one exchange: its ops (every one ours: the test gives whole packs, one per
// pair and direction), as the interposer would launch them.
ExchangeKernelArgs ExchangeArgsOf(Comm& c, int r, std::vector<Op>& ops) {
  ExchangeKernelArgs a{};
  for (int q = 0; q < c.n; ++q) {
    a.staging[q] = c.staging[q].data();
    a.signal[q] = c.signal[q].get();
  }
  a.slot_bytes = c.slot_bytes;
  a.sub_bytes = c.sub_bytes;
  a.blocks_per_part = c.blocks_per_part;
  a.rank = r;
  a.nranks = c.n;
  for (Op& op : ops) {
    ExchangePartArgs& p = a.part[a.nparts++];
    p.user = op.data.data();
    p.bytes = op.data.size();
    p.peer = op.peer;
    p.send = op.send ? 1 : 0;
    uint32_t& counter = (op.send ? c.sent : c.received)[r][op.peer];
    p.first_chunk = counter;
    counter += static_cast<uint32_t>((p.bytes + c.slot_bytes - 1) / c.slot_bytes);
  }
  return a;
}

// sizes[s][d] bytes from s to d (0: no op on that pair). Runs every rank but `absent` at once;
// returns each rank's ops after the exchange and whether it finished.
std::vector<std::vector<Op>> Exchange(Comm& c, const std::vector<std::vector<size_t>>& sizes,
                                      std::mt19937* gen, std::vector<int>* ok,
                                      std::vector<Stall>* stalls, int absent = -1,
                                      int64_t timeout_ns = 60 * kSecondNs) {
  std::vector<std::vector<Op>> ops(static_cast<size_t>(c.n));
  for (int r = 0; r < c.n; ++r) {
    for (int q = 0; q < c.n; ++q) {
      if (sizes[r][q] > 0) {
        Op send{q, true, std::vector<unsigned char>(sizes[r][q])};
        for (unsigned char& b : send.data) b = static_cast<unsigned char>((*gen)());
        ops[r].push_back(std::move(send));
      }
      if (sizes[q][r] > 0) {
        ops[r].push_back(Op{q, false, std::vector<unsigned char>(sizes[q][r], 0xA5)});  // poison
      }
    }
    std::shuffle(ops[r].begin(), ops[r].end(), *gen);
  }
  std::vector<ExchangeKernelArgs> args;
  for (int r = 0; r < c.n; ++r) args.push_back(ExchangeArgsOf(c, r, ops[r]));
  ok->assign(static_cast<size_t>(c.n), 0);
  stalls->assign(static_cast<size_t>(c.n), Stall{});
  std::vector<std::thread> threads;
  const int64_t deadline = MonotonicNs() + timeout_ns;
  for (int r = 0; r < c.n; ++r) {
    if (r == absent) continue;
    threads.emplace_back([&, r] { (*ok)[r] = RunExchangeTwin(args[r], deadline, &(*stalls)[r]); });
  }
  for (std::thread& t : threads) t.join();
  return ops;
}

// Every receive holds what its sender sent.
void ExpectDelivered(const std::vector<std::vector<Op>>& ops) {
  const int n = static_cast<int>(ops.size());
  for (int d = 0; d < n; ++d) {
    for (const Op& recv : ops[d]) {
      if (recv.send) continue;
      const auto& from = ops[recv.peer];
      const auto sent = std::find_if(from.begin(), from.end(),
                                     [&](const Op& o) { return o.send && o.peer == d; });
      ASSERT_NE(sent, from.end());
      EXPECT_TRUE(recv.data == sent->data) << "rank " << d << " from " << recv.peer;
    }
  }
}

TEST(ExchangeTwin, UnequalSizesArriveWholeForEveryRankCount) {
  std::mt19937 gen(11);
  for (int n = 2; n <= 8; ++n) {
    // 64-byte slots, 4 blocks of 16: parts of up to 20 chunks; counters start just before wrap.
    Comm c(n, 64, 4, 0xFFFFFFF0u);
    for (int rep = 0; rep < 4; ++rep) {
      std::vector<std::vector<size_t>> sizes(static_cast<size_t>(n),
                                             std::vector<size_t>(static_cast<size_t>(n)));
      for (auto& row : sizes) {
        for (size_t& b : row) b = 16 * (gen() % 81);  // 0 (no op) to 80 packs
      }
      std::vector<int> ok;
      std::vector<Stall> stalls;
      const auto ops = Exchange(c, sizes, &gen, &ok, &stalls);
      for (int r = 0; r < n; ++r) ASSERT_TRUE(ok[r]) << n << " ranks, rank " << r;
      ExpectDelivered(ops);
    }
  }
}

TEST(ExchangeTwin, ARankThatNeverArrivesEndsItsPeersWaitsNamingIt) {
  std::mt19937 gen(12);
  Comm c(3, 64, 2, 0);
  // Everyone sends 3 chunks to everyone else; rank 2 never runs.
  std::vector<std::vector<size_t>> sizes = {{0, 192, 192}, {192, 0, 192}, {192, 192, 0}};
  std::vector<int> ok;
  std::vector<Stall> stalls;
  Exchange(c, sizes, &gen, &ok, &stalls, /*absent=*/2, /*timeout_ns=*/kSecondNs / 5);
  for (int r = 0; r < 2; ++r) {
    EXPECT_FALSE(ok[r]) << r;
    EXPECT_EQ(stalls[r].rank, r);
    EXPECT_EQ(stalls[r].peer, 2) << r;
    EXPECT_TRUE(stalls[r].barrier == Barrier::kSlotFree ||
                stalls[r].barrier == Barrier::kChunkReady);
  }
}

TEST(ExchangeTwin, ALaunchThePlannerNeverMakesTouchesNothing) {
  Comm c(2, 64, 4, 0);
  std::vector<Op> ops = {{1, true, std::vector<unsigned char>(64, 1)}};
  ExchangeKernelArgs a = ExchangeArgsOf(c, 0, ops);
  a.sub_bytes = 10;  // shares that do not add up to the slot
  Stall s{};
  EXPECT_TRUE(RunExchangeTwin(a, MonotonicNs() + kSecondNs, &s));
  EXPECT_EQ(*FlagOf(c.signal[1].get(), 0, Barrier::kChunkReady, 0), 0u);
}

}  // namespace
}  // namespace ncclscope::collectives
