// Every rank of an AllReduce, AllGather and Broadcast ends with the same bits, as with NCCL; and
// ncclsimFlipNextOutputBit corrupts exactly one bit of exactly the caller's next collective.
//
// NCCL's ring AllReduce (src/device/all_reduce.h, runRing, tag v2.28.9-1) reduces each chunk to
// its final value on one rank only ("step k-1: reduce this buffer and data, which will produce
// the final result ... and push to the next GPU") and then merely copies it around the ring
// (directRecvCopyDirectSend, directRecv): every rank holds the bits one rank computed, whatever
// order a floating-point sum is folded in. The emulator's owner scheme (op_plan.h) does the same;
// these tests pin it with data whose sum depends on the order of its terms.
#include <gtest/gtest.h>

#include <cuda.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "sim/emulator/ncclsim_control.h"
#include "sim/emulator/reduce_kernels.h"
#include "tests/sim/emulator/rank_harness.h"
#include "tests/sim/emulator/sim_job.h"

namespace ncclsim_test {
namespace {

constexpr size_t kCount = 10007;  // several ring chunks for 2-byte types; no rank count divides it

uint64_t mixBits(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

// Mixed signs and magnitudes (2^-6 .. 2^6): sums that round differently in another order, and
// far from overflow even in fp16.
double orderSensitiveValue(int rank, size_t i) {
  const uint64_t h = mixBits((uint64_t(rank) << 40) ^ i);
  const double mant = double(int64_t(h % 2001) - 1000) / 1000.0;
  return std::ldexp(mant, int((h >> 20) % 13) - 6);
}

std::vector<char> inputOf(int rank, ncclDataType_t dt, size_t count) {
  std::vector<char> b(count * ncclsim::dtypeSize(dt));
  for (size_t i = 0; i < count; ++i)
    ncclsim::storeFromDouble(b.data(), i, dt, orderSensitiveValue(rank, i));
  return b;
}

// Any bytes at all (NaN payloads included): a copy must keep every bit.
std::vector<char> rawBytesOf(int rank, size_t bytes) {
  std::vector<char> b(bytes);
  for (size_t i = 0; i < bytes; ++i) b[i] = char(mixBits(uint64_t(rank) * 1000003 + i) & 0xff);
  return b;
}

uint64_t fnv1a(const std::vector<char>& b) {
  uint64_t h = 1469598103934665603ULL;
  for (char c : b) h = (h ^ uint8_t(c)) * 1099511628211ULL;
  return h;
}

// Sum of every rank's input folded in the given rank order, rounding after each step as the
// emulator's kernels do.
std::vector<char> foldInOrder(const std::vector<int>& order, ncclDataType_t dt, size_t count) {
  std::vector<char> acc = inputOf(order[0], dt, count);
  for (size_t k = 1; k < order.size(); ++k) {
    const std::vector<char> in = inputOf(order[k], dt, count);
    ncclsim::foldInto(acc.data(), in.data(), count, dt, ncclsim::RedKind::kSum);
  }
  return acc;
}

// Each rank reports one "<name> <hash>" line per output; returns the hashes per name.
std::map<std::string, std::set<std::string>> hashesByOutput(const std::vector<RankOutcome>& out) {
  std::map<std::string, std::set<std::string>> by;
  for (const RankOutcome& r : out) {
    std::istringstream lines(r.report);
    std::string name, hash;
    while (lines >> name >> hash) by[name].insert(hash);
  }
  return by;
}

const ncclDataType_t kFloatTypes[] = {ncclFloat32, ncclBfloat16, ncclFloat16};

int allOutputs(int rank, int nranks, const ncclUniqueId& id) {
  SimJob job;
  if (!startJob(rank, nranks, id, &job)) return 2;
  std::vector<std::vector<char>> outs;
  std::vector<std::string> names;
  std::vector<std::vector<char>> ins;  // alive until the stream drained
  ncclResult_t rc = ncclSuccess;
  auto call = [&](ncclResult_t r) { rc = rc != ncclSuccess ? rc : r; };
  for (ncclDataType_t dt : kFloatTypes) {
    ins.push_back(inputOf(rank, dt, kCount));
    outs.emplace_back(kCount * ncclsim::dtypeSize(dt));
    names.push_back("allreduce-" + std::to_string(int(dt)));
    call(ncclAllReduce(ins.back().data(), outs.back().data(), kCount, dt, ncclSum, job.comm,
                       job.cstream()));
  }
  const size_t bytes = kCount * 4;
  ins.push_back(rawBytesOf(rank, bytes));
  outs.emplace_back(bytes * size_t(nranks));
  names.push_back("allgather");
  call(ncclAllGather(ins.back().data(), outs.back().data(), kCount, ncclFloat32, job.comm,
                     job.cstream()));
  outs.emplace_back(bytes);
  names.push_back("broadcast");
  call(ncclBroadcast(ins.back().data(), outs.back().data(), kCount, ncclFloat32, nranks - 1,
                     job.comm, job.cstream()));
  if (rc != ncclSuccess || !syncJob(job, 20000)) {
    rankReport("failed %s", ncclGetErrorString(rc));
    return 1;
  }
  for (size_t k = 0; k < outs.size(); ++k) {
    rankReport("%s %016llx", names[k].c_str(), (unsigned long long)fnv1a(outs[k]));
  }
  ncclCommDestroy(job.comm);
  return 0;
}

class BitwiseOutputs : public ::testing::TestWithParam<int> {};

// The data must be able to tell orders apart, or identical outputs would prove nothing.
TEST(BitwiseOutputsData, SumDependsOnTheOrderOfRanks) {
  for (ncclDataType_t dt : kFloatTypes) {
    std::vector<int> up, down;
    for (int r = 0; r < 8; ++r) {
      up.push_back(r);
      down.insert(down.begin(), r);
    }
    EXPECT_NE(fnv1a(foldInOrder(up, dt, kCount)), fnv1a(foldInOrder(down, dt, kCount)))
        << "dtype " << int(dt);
  }
}

TEST_P(BitwiseOutputs, AllReduceAllGatherBroadcastAgreeOnEveryRank) {
  const int n = GetParam();
  const auto out = runRanks(n, allOutputs, 40000);
  const std::string failures = describeFailures(out);
  ASSERT_TRUE(failures.empty()) << failures;
  const auto by = hashesByOutput(out);
  ASSERT_EQ(by.size(), 5u);
  for (const auto& [name, hashes] : by) EXPECT_EQ(hashes.size(), 1u) << name << " on " << n;
  // AllGather and Broadcast also keep every input bit (NaN payloads included).
  std::vector<char> gathered;
  for (int r = 0; r < n; ++r) {
    const std::vector<char> in = rawBytesOf(r, kCount * 4);
    gathered.insert(gathered.end(), in.begin(), in.end());
  }
  char want[17];
  std::snprintf(want, sizeof(want), "%016llx", (unsigned long long)fnv1a(gathered));
  EXPECT_EQ(*by.at("allgather").begin(), want);
  std::snprintf(want, sizeof(want), "%016llx",
                (unsigned long long)fnv1a(rawBytesOf(n - 1, kCount * 4)));
  EXPECT_EQ(*by.at("broadcast").begin(), want);
}

INSTANTIATE_TEST_SUITE_P(Ranks, BitwiseOutputs, ::testing::Values(3, 5, 8));

// Rank 2 arms a flip of bit 37, then sends and receives (which must not take it), then runs an
// AllReduce (which takes it) and a second one (which must not); a host function enqueued right
// after the first AllReduce copies its output, as the probe's hash kernel would read it.
constexpr int kFlipRank = 2;
constexpr uint64_t kFlipBit = 37;
constexpr size_t kFlipCount = 64;

struct Snapshot {
  const std::vector<int32_t>* from;
  std::vector<int32_t> copy;
};

void takeSnapshot(void* arg) {
  auto* s = static_cast<Snapshot*>(arg);
  s->copy = *s->from;
}

int flipOnce(int rank, int nranks, const ncclUniqueId& id) {
  SimJob job;
  if (!startJob(rank, nranks, id, &job)) return 2;
  std::vector<int32_t> in(kFlipCount), first(kFlipCount), second(kFlipCount), p2p(kFlipCount);
  for (size_t i = 0; i < kFlipCount; ++i) in[i] = int32_t(rank * 100 + int(i));
  if (rank == kFlipRank) ncclsimFlipNextOutputBit(kFlipBit);
  const int next = (rank + 1) % nranks, prev = (rank + nranks - 1) % nranks;
  ncclResult_t rc = ncclGroupStart();
  if (rc == ncclSuccess)
    rc = ncclSend(in.data(), kFlipCount, ncclInt32, next, job.comm, job.cstream());
  if (rc == ncclSuccess)
    rc = ncclRecv(p2p.data(), kFlipCount, ncclInt32, prev, job.comm, job.cstream());
  if (rc == ncclSuccess) rc = ncclGroupEnd();
  if (rc == ncclSuccess) {
    rc = ncclAllReduce(in.data(), first.data(), kFlipCount, ncclInt32, ncclSum, job.comm,
                       job.cstream());
  }
  Snapshot snap{&first, {}};
  if (rc == ncclSuccess && cuLaunchHostFunc(job.stream, takeSnapshot, &snap) != CUDA_SUCCESS) {
    rankReport("cuLaunchHostFunc failed");
    return 1;
  }
  if (rc == ncclSuccess) {
    rc = ncclAllReduce(in.data(), second.data(), kFlipCount, ncclInt32, ncclSum, job.comm,
                       job.cstream());
  }
  if (rc != ncclSuccess || !syncJob(job, 20000)) {
    rankReport("failed %s", ncclGetErrorString(rc));
    return 1;
  }
  std::vector<int32_t> want(kFlipCount);
  for (size_t i = 0; i < kFlipCount; ++i) {
    for (int r = 0; r < nranks; ++r) want[i] += int32_t(r * 100 + int(i));
  }
  int bad = 0;
  for (size_t i = 0; i < kFlipCount; ++i) {
    if (p2p[i] != int32_t(prev * 100 + int(i))) ++bad;
  }
  if (bad != 0) rankReport("rank %d: the send/recv data changed", rank);
  if (second != want) {
    rankReport("rank %d: the second AllReduce differs", rank);
    ++bad;
  }
  std::vector<int32_t> want_first = want;
  if (rank == kFlipRank) {
    reinterpret_cast<unsigned char*>(want_first.data())[kFlipBit / 8] ^= 1u << (kFlipBit % 8);
  }
  if (first != want_first) {
    rankReport("rank %d: first AllReduce is not %s", rank,
               rank == kFlipRank ? "the sum with bit 37 flipped" : "the exact sum");
    ++bad;
  }
  if (snap.copy != first) {
    rankReport("rank %d: stream work after the AllReduce saw other bits", rank);
    ++bad;
  }
  ncclCommDestroy(job.comm);
  return bad == 0 ? 0 : 1;
}

TEST(FlipNextOutputBit, CorruptsOnlyTheCallersNextCollectiveBeforeLaterStreamWork) {
  const auto out = runRanks(4, flipOnce, 40000);
  const std::string failures = describeFailures(out);
  EXPECT_TRUE(failures.empty()) << failures;
}

}  // namespace
}  // namespace ncclsim_test
