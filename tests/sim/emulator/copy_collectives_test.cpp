// AllGather, Broadcast/Bcast, AlltoAll, Gather and Scatter on every datatype, every root.
#include <gtest/gtest.h>

#include <cstring>
#include <string>

#include "sim/emulator/reduce_kernels.h"
#include "tests/sim/emulator/check_buffers.h"
#include "tests/sim/emulator/rank_harness.h"
#include "tests/sim/emulator/sim_job.h"

namespace ncclsim_test {
namespace {

// Distinct per (rank, index); the expected value is encoded the same way, so any value works.
double value(int r, size_t i) {
  return double((size_t(r) * 7 + i) % 11);
}

int copyCase(SimJob& job, ncclDataType_t dt, size_t c) {
  const int n = job.nranks, me = job.rank;
  const size_t S = ncclsim::dtypeSize(dt);
  cudaStream_t st = job.cstream();
  TypedBuffer send(dt, c * n), ag(dt, c * n), ag_in(dt, c * n), a2a(dt, c * n), a2a_in(dt, c * n);
  TypedBuffer gat(dt, c * n), sca(dt, c), bc_in(dt, c);
  send.fill([&](size_t i) { return value(me, i); });
  ag_in.fill([&](size_t i) { return value(me, i % c); });
  a2a_in.fill([&](size_t i) { return value(me, i); });
  bc_in.fill([&](size_t i) { return value(me, i); });
  std::vector<TypedBuffer> bc;
  ncclResult_t rc = ncclSuccess;
  auto call = [&](ncclResult_t r) { rc = rc != ncclSuccess ? rc : r; };
  call(ncclAllGather(send.data(), ag.data(), c, dt, job.comm, st));
  char* ag_mine = static_cast<char*>(ag_in.data()) + size_t(me) * c * S;
  call(ncclAllGather(ag_mine, ag_in.data(), c, dt, job.comm, st));
  for (int root = 0; root < n; ++root) {
    bc.emplace_back(dt, c);
    call(ncclBroadcast(send.data(), bc.back().data(), c, dt, root, job.comm, st));
  }
  call(ncclBcast(bc_in.data(), c, dt, 1 % n, job.comm, st));
  call(ncclAlltoAll(send.data(), a2a.data(), c, dt, job.comm, st));
  call(ncclAlltoAll(a2a_in.data(), a2a_in.data(), c, dt, job.comm, st));
  int groot = n - 1, sroot = 1 % n;
  call(ncclGather(send.data(), gat.data(), c, dt, groot, job.comm, st));
  call(ncclScatter(send.data(), sca.data(), c, dt, sroot, job.comm, st));
  if (rc != ncclSuccess || !syncJob(job, 10000)) {
    rankReport("rank %d dtype %s: copy collectives failed or did not complete", me, dtypeName(dt));
    return 1;
  }
  TypedBuffer enc(dt, 1);
  auto exact = [&](double v) {
    enc.set(0, v);
    return enc.get(0);
  };
  auto gathered = [&](size_t i) { return exact(value(int(i / c), i % c)); };
  int bad = expectValues(ag, c * n, gathered, me, "AllGather");
  bad += expectValues(ag_in, c * n, gathered, me, "AllGather(in-place)");
  for (int root = 0; root < n; ++root) {
    bad += expectValues(
        bc[size_t(root)], c, [&](size_t i) { return exact(value(root, i)); }, me,
        "Broadcast root " + std::to_string(root));
  }
  bad += expectValues(
      bc_in, c, [&](size_t i) { return exact(value(1 % n, i)); }, me, "Bcast(in-place)");
  auto a2a_want = [&](size_t i) { return exact(value(int(i / c), size_t(me) * c + i % c)); };
  bad += expectValues(a2a, c * n, a2a_want, me, "AlltoAll");
  bad += expectValues(a2a_in, c * n, a2a_want, me, "AlltoAll(in-place)");
  if (me == groot) bad += expectValues(gat, c * n, gathered, me, "Gather");
  bad += expectValues(
      sca, c, [&](size_t i) { return exact(value(sroot, size_t(me) * c + i)); }, me, "Scatter");
  return bad;
}

int copyMatrix(int rank, int nranks, const ncclUniqueId& id) {
  SimJob job;
  if (!startJob(rank, nranks, id, &job)) return 2;
  int bad = 0;
  for (int dt = 0; dt < ncclNumTypes; ++dt) bad += copyCase(job, ncclDataType_t(dt), 129);
  bad += copyCase(job, ncclFloat64, 40000);  // several ring chunks per peer
  ncclCommDestroy(job.comm);
  return bad == 0 ? 0 : 1;
}

class CopyRankCounts : public ::testing::TestWithParam<int> {};

TEST_P(CopyRankCounts, EveryDtypeEveryRoot) {
  auto out = runRanks(GetParam(), copyMatrix, 40000);
  std::string failures = describeFailures(out);
  EXPECT_TRUE(failures.empty()) << failures;
}

INSTANTIATE_TEST_SUITE_P(Ranks, CopyRankCounts, ::testing::Values(2, 3, 5));

}  // namespace
}  // namespace ncclsim_test
