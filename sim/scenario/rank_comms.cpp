#include "sim/scenario/rank_comms.h"

#include <fmt/format.h>

#include "sim/scenario/cu_error.h"
#include "sim/scenario/rank_bootstrap.h"
#include "sim/scenario/rank_exit_codes.h"

namespace ncclscope::sim {
namespace {

void joinOrBlock(RankBackend& backend, const RankFaults& faults, const std::string& comm,
                 int rank) {
  if (faults.neverJoins(comm)) {
    backend.blockForever(
        fmt::format("never_join of '{}' (rank {} never calls its creation)", comm, rank));
  }
  if (const double ms = faults.joinDelayMs(comm); ms > 0) backend.sleepMs(ms);
}

// The scenario's name shows in traces; ncclConfig_t is otherwise left at NCCL's defaults.
ncclConfig_t namedConfig(const std::string& name) {
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.commName = name.c_str();
  return config;
}

int bootstrapWorld(RankBackend& backend, const RankOptions& opt, const RankFaults& faults,
                   const CommLayout& layout, ncclComm_t& world, std::string& error) {
  const std::string path = uniqueIdPath(opt.run_dir, opt.job_tag);
  ncclUniqueId id;
  if (opt.rank == 0) {
    const ncclResult_t rc = backend.getUniqueId(&id);
    if (rc != ncclSuccess) {
      error = fmt::format("ncclGetUniqueId: {}", ncclGetErrorString(rc));
      return kRankLibraryError;
    }
    // Published before a never_join block, so the other ranks do reach the init that hangs.
    if (!backend.publishUniqueId(path, id, error)) return kRankLibraryError;
  } else if (!backend.waitUniqueId(path, opt.bootstrap_timeout_s, id, error)) {
    return kRankBootstrapTimeout;
  }
  joinOrBlock(backend, faults, layout.name, opt.rank);
  ncclConfig_t config = namedConfig(layout.name);
  const ncclResult_t rc = backend.commInitRankConfig(&world, opt.nranks, id, opt.rank, &config);
  if (rc != ncclSuccess) {
    error = fmt::format("ncclCommInitRankConfig: {}", ncclGetErrorString(rc));
    return kRankLibraryError;
  }
  return kRankOk;
}

}  // namespace

int createComms(RankBackend& backend, const RankOptions& opt, const JobLayout& job,
                const RankFaults& faults, RankComms& out, std::string& error) {
  const auto& layouts = job.comms();
  out.comms.assign(layouts.size(), nullptr);
  out.streams.assign(layouts.size(), nullptr);
  if (const int rc = bootstrapWorld(backend, opt, faults, layouts[0], out.comms[0], error);
      rc != kRankOk) {
    return rc;
  }
  const auto me = static_cast<size_t>(opt.rank);
  for (size_t i = 1; i < layouts.size(); ++i) {
    const CommLayout& c = layouts[i];
    joinOrBlock(backend, faults, c.name, opt.rank);
    ncclConfig_t config = namedConfig(c.name);
    const ncclResult_t rc = backend.commSplit(out.comms[static_cast<size_t>(c.parent)], c.color[me],
                                              c.key[me], &out.comms[i], &config);
    if (rc != ncclSuccess) {
      error = fmt::format("ncclCommSplit of '{}': {}", c.name, ncclGetErrorString(rc));
      return kRankLibraryError;
    }
  }
  for (size_t i = 0; i < layouts.size(); ++i) {
    const CUresult rc = backend.streamCreate(&out.streams[i]);
    if (rc != CUDA_SUCCESS) {
      error = fmt::format("cuStreamCreate for '{}': {}", layouts[i].name, cuError(rc));
      return kRankLibraryError;
    }
  }
  return kRankOk;
}

bool destroyComms(RankBackend& backend, RankComms& rc, std::string& error) {
  for (size_t i = rc.comms.size(); i-- > 0;) {
    if (rc.comms[i] == nullptr) continue;
    const ncclResult_t r = backend.commDestroy(rc.comms[i]);
    rc.comms[i] = nullptr;
    if (r != ncclSuccess && error.empty()) {
      error = fmt::format("ncclCommDestroy: {}", ncclGetErrorString(r));
    }
  }
  for (CUstream& s : rc.streams) {
    if (s == nullptr) continue;
    const CUresult r = backend.streamDestroy(s);
    s = nullptr;
    if (r != CUDA_SUCCESS && error.empty()) error = "cuStreamDestroy: " + cuError(r);
  }
  return error.empty();
}

}  // namespace ncclscope::sim
