// One rank's view of an emulated job inside a forked test child: communicator plus stream.
#pragma once

#include <cuda.h>
#include <nccl.h>

namespace ncclsim_test {

struct SimJob {
  int rank = 0;
  int nranks = 0;
  ncclComm_t comm = nullptr;
  CUstream stream = nullptr;
  cudaStream_t cstream() const { return reinterpret_cast<cudaStream_t>(stream); }
};

// Creates the communicator (blocking until all ranks joined) and a stream. Returns false and
// reports on failure.
bool startJob(int rank, int nranks, const ncclUniqueId& id, SimJob* job);

// Waits for the job's stream; true when it finished within timeout_ms.
bool syncJob(const SimJob& job, int timeout_ms);

}  // namespace ncclsim_test
