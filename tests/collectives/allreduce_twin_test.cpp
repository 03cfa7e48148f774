// The kernels' CPU twin run by one thread per rank over memory they all see, as the emulator's rank
// processes run it over shared memory: every rank gets the same bits, those of the fixed-order fp32
// sum, for every algorithm, data type, size class (uneven two-shot slices included) and rank count
// 2-8, with outputs poisoned before each call, in place or not, registered or copied in, across the
// wrap of the epoch counter; a rank that never arrives makes the others' waits expire, naming it.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <memory>
#include <random>
#include <thread>
#include <vector>

#include "collectives/twins/allreduce_twin.h"
#include "collectives/twins/allreduce_twin_kernel.h"
#include "collectives/twins/narrow_float.h"
#include "tests/collectives/twin_clock.h"

namespace ncclscope::collectives {
namespace {

// A communicator's registered memory and each rank's user buffers, in one process.
struct AllReduceJob {
  int nranks;
  AllReducePlan plan;
  std::vector<std::vector<unsigned char>> input, output, staging, scratch;
  std::vector<std::unique_ptr<Signal>> signal;
  PeerMemory mem{};
  uint32_t epoch;

  AllReduceJob(int n, const AllReducePlan& p, uint32_t first_epoch)
      : nranks(n), plan(p), epoch(first_epoch) {
    for (int r = 0; r < n; ++r) {
      input.emplace_back(p.bytes);
      output.emplace_back(p.bytes);
      staging.emplace_back(p.bytes);
      scratch.emplace_back(p.bytes);
      signal.push_back(std::make_unique<Signal>());
      std::memset(signal.back().get(), 0, sizeof(Signal));
      // Flags start where the previous call of the communicator left them.
      for (uint32_t b = 0; b < kMaxBlocks; ++b) {
        for (int q = 0; q < kMaxRanks; ++q) {
          for (Barrier k : {Barrier::kStart, Barrier::kMiddle, Barrier::kEnd}) {
            *FlagOf(signal.back().get(), b, k, q) = first_epoch - 1;
          }
        }
      }
      mem.staging[r] = staging[r].data();
      mem.scratch[r] = scratch[r].data();
      mem.signal[r] = signal[r].get();
    }
  }

  // Random finite inputs (values a training job reduces: gradients around 1e-2 .. 1e2).
  void Fill(std::mt19937* gen) {
    std::uniform_real_distribution<float> v(-100.0f, 100.0f);
    const size_t per = DtypeBytes(plan.dtype);
    for (auto& in : input) {
      for (size_t i = 0; i < plan.bytes / per; ++i) {
        const float f = v(*gen) * std::ldexp(1.0f, -static_cast<int>((*gen)() % 8));
        if (plan.dtype == Dtype::kFp32) {
          std::memcpy(in.data() + i * 4, &f, 4);
        } else {
          const uint16_t h = plan.dtype == Dtype::kBf16 ? FloatToBf16(f) : FloatToHalf(f);
          std::memcpy(in.data() + i * 2, &h, 2);
        }
      }
    }
  }

  // Runs one call on every rank at once; `in_place` reduces into the inputs. Returns how many ranks
  // finished; *stalls gets the others' reports.
  int Run(bool in_place, std::vector<Stall>* stalls, int absent = -1) {
    const uint32_t e = epoch++;
    std::vector<int> ok(static_cast<size_t>(nranks), 0);
    stalls->assign(static_cast<size_t>(nranks), Stall{});
    std::vector<std::thread> threads;
    for (int r = 0; r < nranks; ++r) {
      if (r == absent) continue;
      std::memset(output[r].data(), 0xA5, plan.bytes);  // poison: a pack left unwritten shows
      threads.emplace_back([&, r] {
        TwinCall c;
        c.plan = &plan;
        c.rank = r;
        c.nranks = nranks;
        c.epoch = e;
        c.input = input[r].data();
        c.output = in_place ? input[r].data() : output[r].data();
        for (int q = 0; q < nranks; ++q) c.peer_input[q] = input[q].data();
        c.deadline_ns = MonotonicNs() + (absent >= 0 ? 2 * kSecondNs : 60 * kSecondNs);
        ok[static_cast<size_t>(r)] = RunAllReduceTwin(c, mem, &(*stalls)[static_cast<size_t>(r)]);
      });
    }
    for (std::thread& t : threads) t.join();
    int done = 0;
    for (int v : ok) done += v;
    return done;
  }

  // The expected sum of element i: fp32, ranks in order 0..n-1, narrowed once.
  std::vector<unsigned char> Expected(const std::vector<std::vector<unsigned char>>& in) const {
    std::vector<unsigned char> out(plan.bytes);
    const size_t per = DtypeBytes(plan.dtype);
    for (size_t i = 0; i < plan.bytes / per; ++i) {
      float acc = 0;
      for (int q = 0; q < nranks; ++q) {
        float v;
        if (plan.dtype == Dtype::kFp32) {
          std::memcpy(&v, in[q].data() + i * 4, 4);
        } else {
          uint16_t h;
          std::memcpy(&h, in[q].data() + i * 2, 2);
          v = plan.dtype == Dtype::kBf16 ? Bf16ToFloat(h) : HalfToFloat(h);
        }
        acc = q == 0 ? v : acc + v;
      }
      if (plan.dtype == Dtype::kFp32) {
        std::memcpy(out.data() + i * 4, &acc, 4);
      } else {
        const uint16_t h = plan.dtype == Dtype::kBf16 ? FloatToBf16(acc) : FloatToHalf(acc);
        std::memcpy(out.data() + i * 2, &h, 2);
      }
    }
    return out;
  }
};

AllReducePlan AllReducePlanFor(Dtype d, size_t bytes, int nranks, bool registered, bool in_place) {
  AllReduceCall c;
  c.nccl_dtype = static_cast<int32_t>(d);
  c.count = bytes / DtypeBytes(d);
  c.nranks = nranks;
  c.single_node = c.peers_reachable = true;
  c.gpu = GpuClass::kHopper;
  c.input_registered = registered;
  c.in_place = in_place;
  return PlanAllReduce(c);
}

struct Case {
  Dtype dtype;
  size_t bytes;
  int nranks;
  bool registered;
  bool in_place;
};

void CheckCase(const Case& k, Algorithm want) {
  AllReducePlan plan = AllReducePlanFor(k.dtype, k.bytes, k.nranks, k.registered, k.in_place);
  ASSERT_EQ(plan.algorithm, want) << AlgorithmName(plan.algorithm);
  // Fewer, narrower blocks than the GPU's keep the test quick and still leave several blocks and
  // every thread a stride: the mapping, not the width, is what is tested.
  plan.blocks = 5;
  plan.threads = 7;
  AllReduceJob job(k.nranks, plan,
                   /*first_epoch=*/0xFFFFFFFEu);  // the counter wraps during the calls
  std::mt19937 gen(static_cast<unsigned>(k.bytes * 31 + static_cast<size_t>(k.nranks)));
  for (int call = 0; call < 4; ++call) {
    SCOPED_TRACE("call " + std::to_string(call) + " epoch " + std::to_string(job.epoch));
    job.Fill(&gen);
    const std::vector<unsigned char> want_bytes = job.Expected(job.input);
    std::vector<Stall> stalls;
    ASSERT_EQ(job.Run(k.in_place, &stalls), k.nranks);
    for (int r = 0; r < k.nranks; ++r) {
      const auto& got = k.in_place ? job.input[r] : job.output[r];
      ASSERT_EQ(std::memcmp(got.data(), want_bytes.data(), plan.bytes), 0) << "rank " << r;
    }
  }
}

TEST(AllReduceTwin, OneShotEveryDtypeAndRankCountGivesTheFixedOrderSumOnEveryRank) {
  for (Dtype d : {Dtype::kBf16, Dtype::kFp16, Dtype::kFp32}) {
    for (int n = 2; n <= kMaxRanks; ++n) {
      SCOPED_TRACE(std::string(DtypeName(d)) + " x" + std::to_string(n));
      CheckCase({d, 4096, n, false, false}, Algorithm::kOneShot);
    }
  }
}

TEST(AllReduceTwin, TwoShotUnevenSlicesEveryDtypeAndRankCount) {
  for (Dtype d : {Dtype::kBf16, Dtype::kFp16, Dtype::kFp32}) {
    for (int n = 3; n <= kMaxRanks; ++n) {  // 2 ranks: one-shot at every size
      SCOPED_TRACE(std::string(DtypeName(d)) + " x" + std::to_string(n));
      // 512 KiB + 48 bytes: two-shot from 3 ranks on; 32771 packs, not a multiple of any rank
      // count from 3 to 8.
      CheckCase({d, 524288 + 48, n, false, false}, Algorithm::kTwoShot);
    }
  }
}

TEST(AllReduceTwin, RegisteredInputsReadInPlaceAndInPlaceCalls) {
  CheckCase({Dtype::kBf16, 4096, 8, true, false}, Algorithm::kOneShot);  // peers read in place
  CheckCase({Dtype::kBf16, 4096, 8, true, true}, Algorithm::kOneShot);   // copied in anyway
  CheckCase({Dtype::kFp32, 524288 + 48, 8, true, true}, Algorithm::kTwoShot);  // no copy needed
  CheckCase({Dtype::kFp16, 524288 + 48, 4, false, true}, Algorithm::kTwoShot);
}

TEST(AllReduceTwin, SmallerThanOnePackPerRankStillCompletes) {
  // 48 bytes over 8 ranks: 3 packs, so five ranks own an empty slice of two-shot.
  AllReducePlan plan = AllReducePlanFor(Dtype::kFp32, 48, 8, false, false);
  plan.algorithm = Algorithm::kTwoShot;
  plan.blocks = 3;
  plan.threads = 2;
  AllReduceJob job(8, plan, 1);
  std::mt19937 gen(3);
  job.Fill(&gen);
  std::vector<Stall> stalls;
  ASSERT_EQ(job.Run(false, &stalls), 8);
  const auto want = job.Expected(job.input);
  for (int r = 0; r < 8; ++r) EXPECT_EQ(job.output[r], want) << "rank " << r;
}

TEST(AllReduceTwin, ARankThatNeverArrivesIsNamedWhenTheWaitExpires) {
  AllReducePlan plan = AllReducePlanFor(Dtype::kBf16, 4096, 4, false, false);
  plan.blocks = 2;
  plan.threads = 4;
  AllReduceJob job(4, plan, 7);
  std::mt19937 gen(5);
  job.Fill(&gen);
  std::vector<Stall> stalls;
  EXPECT_EQ(job.Run(false, &stalls, /*absent=*/2), 0);
  for (int r : {0, 1, 3}) {
    const Stall& s = stalls[static_cast<size_t>(r)];
    EXPECT_EQ(s.rank, r);
    EXPECT_EQ(s.peer, 2);
    EXPECT_EQ(s.block, 0u);
    EXPECT_EQ(s.barrier, Barrier::kStart);
    EXPECT_EQ(s.want, 7u);
    EXPECT_EQ(s.seen, 6u);
    char line[160];
    DescribeStall(s, line, sizeof(line));
    EXPECT_EQ(std::string(line), "rank " + std::to_string(r) +
                                     " waited for rank 2 at the start barrier of block 0 "
                                     "(epoch 7, flag 6)");
  }
}

// The twin entered as the emulated driver enters a kernel: launch shape and AllReduceKernelArgs,
// as the interposer fills them (copy-in: every rank's staging buffer as source).
AllReduceKernelArgs AllReduceArgsOf(AllReduceJob& job, int r, bool copy_in, KernelStall* stall) {
  AllReduceKernelArgs a{};
  for (int q = 0; q < job.nranks; ++q) {
    a.source[q] = copy_in ? job.staging[q].data() : job.input[q].data();
    a.scratch[q] = job.scratch[q].data();
    a.signal[q] = job.signal[q].get();
  }
  a.input = job.input[r].data();
  a.staging = job.staging[r].data();
  a.output = job.output[r].data();
  a.stall = stall;
  a.packs = job.plan.packs;
  a.timeout_ns = 2 * kSecondNs;
  a.rank = r;
  a.nranks = job.nranks;
  a.epoch = job.epoch;
  a.copy_in = copy_in ? 1 : 0;
  return a;
}

TEST(AllReduceTwin, KernelEntryGivesTheSameBitsAndReportsAStallInItsRecord) {
  for (const bool copy_in : {true, false}) {
    AllReducePlan plan = AllReducePlanFor(Dtype::kBf16, 524288 + 48, 6, !copy_in, false);
    ASSERT_EQ(plan.copy_in, copy_in);
    AllReduceJob job(6, plan, 3);
    std::mt19937 gen(11);
    job.Fill(&gen);
    const auto want = job.Expected(job.input);
    KernelStall stall{};
    std::vector<std::thread> ranks;
    for (int r = 0; r < 6; ++r) {
      ranks.emplace_back([&, r] {
        RunAllReduceTwinKernel(Algorithm::kTwoShot, Dtype::kBf16,
                               AllReduceArgsOf(job, r, copy_in, &stall), 4, 9);
      });
    }
    for (std::thread& t : ranks) t.join();
    EXPECT_EQ(stall.code, 0);
    for (int r = 0; r < 6; ++r) EXPECT_EQ(job.output[r], want) << "rank " << r;
  }
  // Rank 1 never launches: rank 0's record names it, at the start barrier of block 0.
  AllReducePlan plan = AllReducePlanFor(Dtype::kFp32, 4096, 2, false, false);
  AllReduceJob job(2, plan, 9);
  KernelStall stall{};
  RunAllReduceTwinKernel(Algorithm::kOneShot, Dtype::kFp32, AllReduceArgsOf(job, 0, true, &stall),
                         2, 4);
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
