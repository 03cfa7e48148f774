// The all-to-all kernel's CPU twin run by one thread per rank over memory they all see, as the
// emulator's rank processes run it over shared memory: every rank's recvbuff holds, at peer x
// count, the peer's block for it (ncclAlltoAll's layout, NCCL v2.28.9 src/nccl.h.in: "data to send
// to destination rank j is taken from sendbuff+j*count and data received from source rank i is
// placed at recvbuff+i*count"), for every rank count 2-8, one pack per peer and pack counts that
// do not divide by blocks x threads, outputs poisoned before each call, in place (copied in) or
// read in place from registered sendbuffs, across the wrap of the epoch counter; a rank that never
// arrives makes the others' waits expire, naming it. The same through the kernel's entry
// (AlltoAllKernelArgs), as the emulated driver runs it.
#include <gtest/gtest.h>

#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "collectives/twins/alltoall_twin.h"
#include "collectives/twins/alltoall_twin_kernel.h"
#include "tests/collectives/nccl_codes.h"
#include "tests/collectives/twin_clock.h"

namespace ncclscope::collectives {
namespace {

// A communicator's registered memory and each rank's user buffers, in one process.
struct AlltoAllJob {
  int nranks;
  AlltoAllPlan plan;
  std::vector<std::vector<unsigned char>> input, output, staging;
  std::vector<std::unique_ptr<Signal>> signal;
  AlltoAllPeerMemory mem{};
  uint32_t epoch;

  AlltoAllJob(int n, const AlltoAllPlan& p, uint32_t first_epoch)
      : nranks(n), plan(p), epoch(first_epoch) {
    for (int r = 0; r < n; ++r) {
      input.emplace_back(p.bytes);
      output.emplace_back(p.bytes);
      staging.emplace_back(p.bytes);
      signal.push_back(std::make_unique<Signal>());
      // Flags start where the previous call of the communicator left them.
      for (uint32_t b = 0; b < kMaxBlocks; ++b) {
        for (int q = 0; q < kMaxRanks; ++q) {
          for (Barrier k : {Barrier::kStart, Barrier::kMiddle, Barrier::kEnd}) {
            *FlagOf(signal.back().get(), b, k, q) = first_epoch - 1;
          }
        }
      }
      mem.staging[r] = staging[r].data();
      mem.signal[r] = signal[r].get();
    }
  }

  // Random bytes: the kernel moves bytes, whatever the data type.
  void Fill(std::mt19937* gen) {
    for (auto& in : input) {
      for (unsigned char& c : in) c = static_cast<unsigned char>((*gen)());
    }
  }

  // Runs one call on every rank but `absent` at once; `in_place` sends from and receives into
  // the inputs. Returns how many ranks finished; *stalls gets the others' reports.
  int Run(bool in_place, std::vector<Stall>* stalls, int absent = -1) {
    const uint32_t e = epoch++;
    std::vector<int> ok(static_cast<size_t>(nranks), 0);
    stalls->assign(static_cast<size_t>(nranks), Stall{});
    for (int r = 0; r < nranks; ++r) {
      std::memset(output[r].data(), 0xA5, plan.bytes);  // poison: a pack left unwritten shows
    }
    std::vector<std::thread> threads;
    for (int r = 0; r < nranks; ++r) {
      if (r == absent) continue;
      threads.emplace_back([&, r] {
        AlltoAllTwinCall c;
        c.plan = &plan;
        c.rank = r;
        c.nranks = nranks;
        c.epoch = e;
        c.input = input[r].data();
        c.output = in_place ? input[r].data() : output[r].data();
        for (int q = 0; q < nranks; ++q) c.peer_input[q] = input[q].data();
        c.deadline_ns = MonotonicNs() + (absent >= 0 ? 2 * kSecondNs : 60 * kSecondNs);
        ok[static_cast<size_t>(r)] = RunAlltoAllTwin(c, mem, &(*stalls)[static_cast<size_t>(r)]);
      });
    }
    for (std::thread& t : threads) t.join();
    int done = 0;
    for (int v : ok) done += v;
    return done;
  }

  // What rank r receives: block r of every rank p's input, at p x (bytes per peer).
  std::vector<unsigned char> Expected(const std::vector<std::vector<unsigned char>>& in,
                                      int r) const {
    const size_t per_peer = plan.bytes / static_cast<size_t>(nranks);
    std::vector<unsigned char> out(plan.bytes);
    for (int p = 0; p < nranks; ++p) {
      std::memcpy(out.data() + static_cast<size_t>(p) * per_peer,
                  in[p].data() + static_cast<size_t>(r) * per_peer, per_peer);
    }
    return out;
  }
};

AlltoAllPlan AlltoAllPlanFor(int32_t nccl_dtype, size_t count, int nranks, bool registered,
                             bool in_place) {
  AlltoAllCall c;
  c.nccl_dtype = nccl_dtype;
  c.count = count;
  c.nranks = nranks;
  c.single_node = c.peers_reachable = true;
  c.gpu = GpuClass::kHopper;
  c.input_registered = registered;
  c.in_place = in_place;
  return PlanAlltoAll(c);
}

// Four calls of one job, each checked on every rank; the epoch counter wraps between the second
// and the third.
void CheckCalls(const AlltoAllPlan& plan, int nranks, bool in_place, uint32_t blocks,
                uint32_t threads) {
  ASSERT_EQ(plan.algorithm, Algorithm::kPull) << FallbackText(plan.fallback);
  AlltoAllPlan p = plan;
  // Fewer, narrower blocks than the GPU's keep the test quick and still leave several blocks and
  // every thread a stride: the mapping, not the width, is what is tested.
  p.blocks = blocks;
  p.threads = threads;
  AlltoAllJob job(nranks, p, /*first_epoch=*/0xFFFFFFFEu);
  std::mt19937 gen(static_cast<unsigned>(p.bytes * 31 + static_cast<size_t>(nranks)));
  for (int call = 0; call < 4; ++call) {
    SCOPED_TRACE("call " + std::to_string(call) + " epoch " + std::to_string(job.epoch));
    job.Fill(&gen);
    const std::vector<std::vector<unsigned char>> sent = job.input;
    std::vector<Stall> stalls;
    ASSERT_EQ(job.Run(in_place, &stalls), nranks);
    for (int r = 0; r < nranks; ++r) {
      const auto& got = in_place ? job.input[r] : job.output[r];
      ASSERT_EQ(got, job.Expected(sent, r)) << "rank " << r;
    }
  }
}

TEST(AlltoAllTwin, EveryRankCountAndSizeGivesNcclsLayoutOnEveryRank) {
  struct Size {
    int32_t dtype;
    size_t count;
    const char* what;
  };
  // Blocks x threads = 5 x 7 = 35 packs per stride.
  const Size sizes[] = {
      {kNcclInt8, 16, "one pack per peer"},
      {kNcclFp16, size_t{8} * 35, "exactly one stride per peer"},
      {kNcclFp32, size_t{4} * (2 * 35 + 3), "two strides and 3 packs per peer"},
      {kNcclFp64, size_t{2} * 22, "22 packs per peer: some blocks have fewer packs than threads"},
  };
  for (const Size& s : sizes) {
    for (int n = 2; n <= kMaxRanks; ++n) {
      SCOPED_TRACE(std::string(s.what) + ", " + std::to_string(n) + " ranks");
      CheckCalls(AlltoAllPlanFor(s.dtype, s.count, n, false, false), n, false, 5, 7);
    }
  }
}

TEST(AlltoAllTwin, InPlaceCallsAreCopiedInAndCorrect) {
  for (int n : {2, 5, 8}) {
    SCOPED_TRACE(std::to_string(n) + " ranks");
    // Registered, but in place: the plan must copy in, or a rank would overwrite the block a peer
    // has yet to read.
    const AlltoAllPlan plan =
        AlltoAllPlanFor(kNcclFp16, size_t{8} * 41, n, /*registered=*/true, /*in_place=*/true);
    EXPECT_TRUE(plan.copy_in);
    CheckCalls(plan, n, /*in_place=*/true, 3, 8);
  }
}

TEST(AlltoAllTwin, RegisteredSendbuffsAreReadInPlaceWithoutStaging) {
  const AlltoAllPlan plan =
      AlltoAllPlanFor(kNcclFp32, size_t{4} * 29, 6, /*registered=*/true, false);
  ASSERT_FALSE(plan.copy_in);
  CheckCalls(plan, 6, false, 4, 5);
}

TEST(AlltoAllTwin, ARankThatNeverArrivesIsNamedWhenTheWaitExpires) {
  AlltoAllPlan plan = AlltoAllPlanFor(kNcclFp16, size_t{8} * 4, 4, false, false);
  ASSERT_EQ(plan.algorithm, Algorithm::kPull);
  plan.blocks = 2;
  plan.threads = 4;
  AlltoAllJob job(4, plan, 7);
  std::mt19937 gen(5);
  job.Fill(&gen);
  std::vector<Stall> stalls;
  EXPECT_EQ(job.Run(false, &stalls, /*absent=*/1), 0);
  for (int r : {0, 2, 3}) {
    const Stall& s = stalls[static_cast<size_t>(r)];
    char line[160];
    DescribeStall(s, line, sizeof(line));
    EXPECT_EQ(std::string(line), "rank " + std::to_string(r) +
                                     " waited for rank 1 at the start barrier of block 0 "
                                     "(epoch 7, flag 6)");
  }
}

// The twin entered as the emulated driver enters a kernel: launch shape and AlltoAllKernelArgs, as
// the routing will fill them (copy-in: every rank's staging buffer as source).
AlltoAllKernelArgs AlltoAllArgsOf(AlltoAllJob& job, int r, bool copy_in, KernelStall* stall) {
  AlltoAllKernelArgs a{};
  for (int q = 0; q < job.nranks; ++q) {
    a.source[q] = copy_in ? job.staging[q].data() : job.input[q].data();
    a.signal[q] = job.signal[q].get();
  }
  a.input = job.input[r].data();
  a.staging = job.staging[r].data();
  a.output = job.output[r].data();
  a.stall = stall;
  a.packs_per_peer = job.plan.packs_per_peer;
  a.timeout_ns = 2 * kSecondNs;
  a.rank = r;
  a.nranks = job.nranks;
  a.epoch = job.epoch;
  a.copy_in = copy_in ? 1 : 0;
  return a;
}

TEST(AlltoAllTwin, KernelEntryGivesNcclsLayoutAndReportsAStallInItsRecord) {
  for (const bool copy_in : {true, false}) {
    SCOPED_TRACE(copy_in ? "copy-in" : "registered");
    const AlltoAllPlan plan = AlltoAllPlanFor(kNcclFp32, size_t{4} * 37, 5, !copy_in, false);
    ASSERT_EQ(plan.copy_in, copy_in);
    AlltoAllJob job(5, plan, 3);
    std::mt19937 gen(11);
    job.Fill(&gen);
    for (auto& out : job.output) std::memset(out.data(), 0xA5, plan.bytes);
    KernelStall stall{};
    std::vector<std::thread> ranks;
    for (int r = 0; r < 5; ++r) {
      ranks.emplace_back([&, r] {
        RunAlltoAllTwinKernel(AlltoAllArgsOf(job, r, copy_in, &stall), /*blocks=*/4, 9);
      });
    }
    for (std::thread& t : ranks) t.join();
    EXPECT_EQ(stall.code, 0);
    for (int r = 0; r < 5; ++r) EXPECT_EQ(job.output[r], job.Expected(job.input, r)) << r;
  }
  // Rank 1 never launches: rank 0's record names it, at the start barrier of block 0.
  const AlltoAllPlan plan = AlltoAllPlanFor(kNcclFp16, 8, 2, false, false);
  AlltoAllJob job(2, plan, 9);
  KernelStall stall{};
  RunAlltoAllTwinKernel(AlltoAllArgsOf(job, 0, true, &stall), 2, 4);
  EXPECT_EQ(stall.code, 1);
  EXPECT_EQ(stall.rank, 0);
  EXPECT_EQ(stall.peer, 1);
  EXPECT_EQ(stall.block, 0u);
  EXPECT_EQ(stall.barrier, static_cast<uint32_t>(Barrier::kStart));
  EXPECT_EQ(stall.want, 9u);
  EXPECT_EQ(stall.seen, 8u);
}

}  // namespace
}  // namespace ncclscope::collectives
