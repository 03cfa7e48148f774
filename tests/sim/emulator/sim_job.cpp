#include "tests/sim/emulator/sim_job.h"

#include <ctime>

#include "tests/sim/emulator/rank_harness.h"

namespace ncclsim_test {

bool startJob(int rank, int nranks, const ncclUniqueId& id, SimJob* job) {
  job->rank = rank;
  job->nranks = nranks;
  cuInit(0);
  ncclResult_t r = ncclCommInitRank(&job->comm, nranks, id, rank);
  if (r != ncclSuccess) {
    rankReport("rank %d: ncclCommInitRank failed: %s", rank, ncclGetErrorString(r));
    return false;
  }
  if (cuStreamCreate(&job->stream, 0) != CUDA_SUCCESS) {
    rankReport("rank %d: cuStreamCreate failed", rank);
    return false;
  }
  return true;
}

bool syncJob(const SimJob& job, int timeout_ms) {
  timespec start, now;
  clock_gettime(CLOCK_MONOTONIC, &start);
  for (;;) {
    if (cuStreamQuery(job.stream) == CUDA_SUCCESS) return true;
    clock_gettime(CLOCK_MONOTONIC, &now);
    long ms = (now.tv_sec - start.tv_sec) * 1000 + (now.tv_nsec - start.tv_nsec) / 1000000;
    if (ms >= timeout_ms) return false;
    timespec nap{0, 1000000};
    nanosleep(&nap, nullptr);
  }
}

}  // namespace ncclsim_test
