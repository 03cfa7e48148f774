// AllReduce, ReduceScatter and Reduce on every datatype with every reduction operator, exact.
#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "sim/emulator/reduce_kernels.h"
#include "tests/sim/emulator/check_buffers.h"
#include "tests/sim/emulator/rank_harness.h"
#include "tests/sim/emulator/sim_job.h"

namespace ncclsim_test {
namespace {

constexpr int kRedCases = 6;  // sum, prod, max, min, avg, premulsum

// Rank r's input at global index i; small integers so every result is exact, even in fp8.
double contribution(int red, int r, size_t i, int n) {
  switch (red) {
    case ncclProd:
      return r == int(i % size_t(n)) ? double(1 + i % 3) : 1.0;
    case ncclMax:
    case ncclMin:
      return double((size_t(r) * 3 + i) % 5);
    case ncclAvg:
      return double(i % 3);
    default:
      return double((size_t(r) + i) % 2);  // sum, premulsum
  }
}

double factor(int red, int r) {
  return red == kRedCases - 1 ? double(1 + r % 2) : 1.0;
}

double expected(int red, size_t i, int n) {
  double acc = contribution(red, 0, i, n) * factor(red, 0);
  for (int r = 1; r < n; ++r) {
    double v = contribution(red, r, i, n) * factor(red, r);
    if (red == ncclProd)
      acc *= v;
    else if (red == ncclMax)
      acc = v > acc ? v : acc;
    else if (red == ncclMin)
      acc = v < acc ? v : acc;
    else
      acc += v;
  }
  return red == ncclAvg ? acc / n : acc;
}

// Runs one (dtype, op) case; returns the number of bad elements.
int runCase(SimJob& job, ncclDataType_t dt, int red, size_t count, size_t rcount) {
  const int n = job.nranks, me = job.rank;
  ncclRedOp_t op = static_cast<ncclRedOp_t>(red);
  // Device-resident factors must outlive the op: they are read when it runs.
  static TypedBuffer* dev_scalar = nullptr;
  if (red == kRedCases - 1) {
    TypedBuffer s(dt, 1);
    s.set(0, factor(red, me));
    if (dt % 2 == 0) {
      delete dev_scalar;
      dev_scalar = new TypedBuffer(s);
      ncclRedOpCreatePreMulSum(&op, dev_scalar->data(), dt, ncclScalarDevice, job.comm);
    } else {
      ncclRedOpCreatePreMulSum(&op, s.data(), dt, ncclScalarHostImmediate, job.comm);
    }
  }
  auto in = [&](size_t i) { return contribution(red, me, i, n); };
  TypedBuffer ar_send(dt, count), ar_recv(dt, count), ar_inplace(dt, count);
  ar_send.fill(in);
  ar_inplace.fill(in);
  TypedBuffer rs_send(dt, rcount * size_t(n)), rs_recv(dt, rcount), rs_inplace(dt, rcount * n);
  rs_send.fill(in);
  rs_inplace.fill(in);
  int root = (int(dt) + red) % n;
  TypedBuffer red_recv(dt, count);
  ncclResult_t rc = ncclSuccess;
  auto call = [&](ncclResult_t r) { rc = rc != ncclSuccess ? rc : r; };
  call(ncclAllReduce(ar_send.data(), ar_recv.data(), count, dt, op, job.comm, job.cstream()));
  call(ncclAllReduce(ar_inplace.data(), ar_inplace.data(), count, dt, op, job.comm, job.cstream()));
  call(ncclReduceScatter(rs_send.data(), rs_recv.data(), rcount, dt, op, job.comm, job.cstream()));
  char* rs_mine = static_cast<char*>(rs_inplace.data()) + rcount * me * ncclsim::dtypeSize(dt);
  call(ncclReduceScatter(rs_inplace.data(), rs_mine, rcount, dt, op, job.comm, job.cstream()));
  call(ncclReduce(ar_send.data(), red_recv.data(), count, dt, op, root, job.comm, job.cstream()));
  std::string tag = std::string("op ") + redOpName(op);
  if (rc != ncclSuccess) {
    rankReport("rank %d %s dtype %s: call failed: %s", me, tag.c_str(), dtypeName(dt),
               ncclGetErrorString(rc));
    return 1;
  }
  if (!syncJob(job, 10000)) {
    rankReport("rank %d %s dtype %s: did not complete", me, tag.c_str(), dtypeName(dt));
    return 1;
  }
  if (red == kRedCases - 1) ncclRedOpDestroy(op, job.comm);
  auto want = [&](size_t i) { return expected(red, i, n); };
  auto want_rs = [&](size_t i) { return expected(red, size_t(me) * rcount + i, n); };
  int bad = expectValues(ar_recv, count, want, me, "AllReduce " + tag);
  bad += expectValues(ar_inplace, count, want, me, "AllReduce(in-place) " + tag);
  bad += expectValues(rs_recv, rcount, want_rs, me, "ReduceScatter " + tag);
  TypedBuffer mine(dt, rcount);
  std::memcpy(mine.data(), rs_mine, rcount * ncclsim::dtypeSize(dt));
  bad += expectValues(mine, rcount, want_rs, me, "ReduceScatter(in-place) " + tag);
  if (me == root) bad += expectValues(red_recv, count, want, me, "Reduce root " + tag);
  return bad;
}

int reduceMatrix(int rank, int nranks, const ncclUniqueId& id) {
  SimJob job;
  if (!startJob(rank, nranks, id, &job)) return 2;
  int bad = 0;
  for (int dt = 0; dt < ncclNumTypes; ++dt) {
    for (int red = 0; red < kRedCases; ++red) {
      bad += runCase(job, static_cast<ncclDataType_t>(dt), red, 1003, 257);
    }
  }
  ncclCommDestroy(job.comm);
  return bad == 0 ? 0 : 1;
}

TEST(ReduceCollectives, EveryDtypeEveryOpOnFourRanks) {
  auto out = runRanks(4, reduceMatrix, 40000);
  std::string failures = describeFailures(out);
  EXPECT_TRUE(failures.empty()) << failures;
}

// Sizes beyond one ring chunk (256 KiB) and rank counts that do not divide the count.
int largeSum(int rank, int nranks, const ncclUniqueId& id) {
  SimJob job;
  if (!startJob(rank, nranks, id, &job)) return 2;
  int bad = runCase(job, ncclFloat32, ncclSum, 600001, 70001);
  bad += runCase(job, ncclUint8, ncclMax, 700003, 3);
  return bad == 0 ? 0 : 1;
}

class ReduceRankCounts : public ::testing::TestWithParam<int> {};

TEST_P(ReduceRankCounts, LargeMultiChunkResultsAreExact) {
  auto out = runRanks(GetParam(), largeSum, 40000);
  std::string failures = describeFailures(out);
  EXPECT_TRUE(failures.empty()) << failures;
}

INSTANTIATE_TEST_SUITE_P(Ranks, ReduceRankCounts, ::testing::Values(1, 2, 3, 8));

}  // namespace
}  // namespace ncclsim_test
