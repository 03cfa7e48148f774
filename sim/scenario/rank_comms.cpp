#include "sim/scenario/rank_comms.h"

#include <fmt/format.h>

#include "sim/scenario/fault_actions.h"
#include "sim/scenario/rank_bootstrap.h"
#include "sim/scenario/rank_exit_codes.h"

namespace ncclscope::sim {
namespace {

std::string cuError(CUresult rc) {
  const char* s = nullptr;
  cuGetErrorName(rc, &s);
  return s != nullptr ? s : fmt::format("CUresult {}", static_cast<int>(rc));
}

void joinOrBlock(const RankFaults& faults, const std::string& comm, int rank) {
  if (faults.neverJoins(comm)) {
    blockForever(fmt::format("never_join of '{}' (rank {} never calls its creation)", comm, rank));
  }
}

int bootstrapWorld(const RankOptions& opt, const RankFaults& faults, ncclComm_t& world,
                   std::string& error) {
  const std::string path = uniqueIdPath(opt.run_dir, opt.job_tag);
  ncclUniqueId id;
  if (opt.rank == 0) {
    const ncclResult_t rc = ncclGetUniqueId(&id);
    if (rc != ncclSuccess) {
      error = fmt::format("ncclGetUniqueId: {}", ncclGetErrorString(rc));
      return kRankLibraryError;
    }
    // Published before a never_join block, so the other ranks do reach the init that hangs.
    if (!publishUniqueId(path, id, error)) return kRankLibraryError;
  } else if (!waitUniqueId(path, opt.bootstrap_timeout_s, id, error)) {
    return kRankBootstrapTimeout;
  }
  joinOrBlock(faults, "world", opt.rank);
  const ncclResult_t rc = ncclCommInitRank(&world, opt.nranks, id, opt.rank);
  if (rc != ncclSuccess) {
    error = fmt::format("ncclCommInitRank: {}", ncclGetErrorString(rc));
    return kRankLibraryError;
  }
  return kRankOk;
}

}  // namespace

bool setupDevice(int local_rank, std::string& error) {
  int count = 0;
  CUdevice dev;
  CUcontext ctx;
  CUresult rc = cuInit(0);
  if (rc == CUDA_SUCCESS) rc = cuDeviceGetCount(&count);
  if (rc == CUDA_SUCCESS && count <= 0) rc = CUDA_ERROR_NO_DEVICE;
  if (rc == CUDA_SUCCESS) rc = cuDeviceGet(&dev, local_rank % count);
  if (rc == CUDA_SUCCESS) rc = cuDevicePrimaryCtxRetain(&ctx, dev);
  if (rc == CUDA_SUCCESS) rc = cuCtxSetCurrent(ctx);
  if (rc != CUDA_SUCCESS) error = "device setup: " + cuError(rc);
  return rc == CUDA_SUCCESS;
}

int createComms(const RankOptions& opt, const JobLayout& job, const RankFaults& faults,
                RankComms& out, std::string& error) {
  const auto& layouts = job.comms();
  out.comms.assign(layouts.size(), nullptr);
  out.streams.assign(layouts.size(), nullptr);
  if (const int rc = bootstrapWorld(opt, faults, out.comms[0], error); rc != kRankOk) return rc;
  const auto me = static_cast<size_t>(opt.rank);
  for (size_t i = 1; i < layouts.size(); ++i) {
    const CommLayout& c = layouts[i];
    joinOrBlock(faults, c.name, opt.rank);
    const ncclResult_t rc = ncclCommSplit(out.comms[static_cast<size_t>(c.parent)], c.color[me],
                                          c.key[me], &out.comms[i], nullptr);
    if (rc != ncclSuccess) {
      error = fmt::format("ncclCommSplit of '{}': {}", c.name, ncclGetErrorString(rc));
      return kRankLibraryError;
    }
  }
  for (size_t i = 0; i < layouts.size(); ++i) {
    const CUresult rc = cuStreamCreate(&out.streams[i], CU_STREAM_NON_BLOCKING);
    if (rc != CUDA_SUCCESS) {
      error = fmt::format("cuStreamCreate for '{}': {}", layouts[i].name, cuError(rc));
      return kRankLibraryError;
    }
  }
  return kRankOk;
}

bool destroyComms(RankComms& rc, std::string& error) {
  for (size_t i = rc.comms.size(); i-- > 0;) {
    if (rc.comms[i] == nullptr) continue;
    const ncclResult_t r = ncclCommDestroy(rc.comms[i]);
    rc.comms[i] = nullptr;
    if (r != ncclSuccess && error.empty()) {
      error = fmt::format("ncclCommDestroy: {}", ncclGetErrorString(r));
    }
  }
  for (CUstream& s : rc.streams) {
    if (s == nullptr) continue;
    const CUresult r = cuStreamDestroy(s);
    s = nullptr;
    if (r != CUDA_SUCCESS && error.empty()) error = "cuStreamDestroy: " + cuError(r);
  }
  return error.empty();
}

}  // namespace ncclscope::sim
