// Exported communicator lifecycle entry points: creation (init, split, shrink), teardown (finalize,
// destroy, abort, revoke) and queries.
#include <algorithm>
#include <cstring>
#include <vector>

#include "sim/emulator/api_support.h"
#include "sim/emulator/bootstrap.h"
#include "sim/emulator/comm.h"
#include "sim/emulator/group.h"
#include "sim/emulator/nvtx_ranges.h"
#include "sim/emulator/profiler.h"

using ncclsim::failWith;

namespace {

// Within a group, creation only publishes arrival; the outermost ncclGroupEnd waits for the others.
ncclResult_t createComm(ncclComm_t* out, int nranks, const ncclUniqueId& id, int rank, int dev,
                        const char* name = nullptr) {
  ncclsim::nvtxInitOnce();  // NCCL: the creation calls -> ncclInit
  if (out == nullptr) return failWith(ncclInvalidArgument, "comm pointer is NULL");
  if (nranks < 1 || rank < 0 || rank >= nranks) {
    return failWith(ncclInvalidArgument, "invalid rank %d of %d", rank, nranks);
  }
  bool defer = ncclsim::groupActive();
  ncclComm* c = nullptr;
  ncclResult_t r = ncclsim::commCreate(id, nranks, rank, dev, !defer, &c);
  if (r != ncclSuccess) return failWith(r, "cannot create communicator (see stderr)");
  if (defer) ncclsim::groupDeferJoin(c);
  c->profiler = ncclsim::profilerCommInit(c->id_hash, name, nranks, rank);
  *out = c;
  return ncclSuccess;
}

// Survivors of a split/shrink create the child with a derived id; its own join is the barrier.
// Like NCCL (parseCommConfig in src/init.cc, 2.28.9), the child's name is its config's commName,
// which the profiler's init receives.
ncclResult_t createChild(ncclComm* parent, const ncclUniqueId& id, int nranks, int rank,
                         ncclComm_t* newcomm, const ncclConfig_t* config) {
  const char* name = config != nullptr ? config->commName : nullptr;
  return createComm(newcomm, nranks, id, rank, parent->cuda_dev, name);
}

}  // namespace

extern "C" {

ncclResult_t pncclCommInitRank(ncclComm_t* comm, int nranks, ncclUniqueId commId, int rank) {
  return createComm(comm, nranks, commId, rank, ncclsim::currentCudaDevice());
}

ncclResult_t pncclCommInitRankConfig(ncclComm_t* comm, int nranks, ncclUniqueId commId, int rank,
                                     ncclConfig_t* config) {
  // Non-blocking configs behave as blocking ones; the result is still ncclSuccess.
  const char* name = config != nullptr ? config->commName : nullptr;
  return createComm(comm, nranks, commId, rank, ncclsim::currentCudaDevice(), name);
}

ncclResult_t pncclCommInitRankScalable(ncclComm_t* newcomm, int nranks, int myrank, int nId,
                                       ncclUniqueId* commIds, ncclConfig_t* config) {
  if (nId < 1 || commIds == nullptr) return failWith(ncclInvalidArgument, "no unique id given");
  return pncclCommInitRankConfig(newcomm, nranks, commIds[0], myrank, config);
}

// All ranks in this process, one per device: every rank first announces itself, then all wait.
ncclResult_t pncclCommInitAll(ncclComm_t* comms, int ndev, const int* devlist) {
  ncclsim::nvtxInitOnce();
  if (comms == nullptr || ndev < 1) return failWith(ncclInvalidArgument, "invalid ndev %d", ndev);
  ncclUniqueId id = ncclsim::makeUniqueId();
  for (int i = 0; i < ndev; ++i) {
    ncclResult_t r = ncclsim::commCreate(id, ndev, i, devlist ? devlist[i] : i, false, &comms[i]);
    if (r != ncclSuccess) return failWith(r, "cannot create communicator %d of %d", i, ndev);
    comms[i]->profiler = ncclsim::profilerCommInit(comms[i]->id_hash, nullptr, ndev, i);
  }
  for (int i = 0; i < ndev; ++i) ncclsim::commFinishJoin(comms[i]);
  return ncclSuccess;
}

ncclResult_t pncclCommSplit(ncclComm_t comm, int color, int key, ncclComm_t* newcomm,
                            ncclConfig_t* config) {
  if (comm == nullptr || newcomm == nullptr) return failWith(ncclInvalidArgument, "NULL argument");
  if (color < 0 && color != NCCL_SPLIT_NOCOLOR) {
    return failWith(ncclInvalidArgument, "invalid color %d", color);
  }
  ncclsim::commFinishJoin(comm);
  uint64_t round, index;
  {
    std::lock_guard<std::mutex> lock(comm->issue_mu);
    round = ++comm->boot_round;
    index = ++comm->split_count;
  }
  uint8_t blob[ncclsim::kBlobBytes] = {};
  int32_t mine[2] = {color, key};
  std::memcpy(blob, mine, sizeof(mine));
  std::vector<uint8_t> all(size_t(comm->nranks) * ncclsim::kBlobBytes);
  ncclsim::bootstrapAllGather(comm->seg, comm->rank, comm->nranks, round, blob, all.data());
  *newcomm = nullptr;
  if (color == NCCL_SPLIT_NOCOLOR) return ncclSuccess;
  // Members ordered by (key, parent rank) become ranks 0..m-1 of the child.
  std::vector<std::pair<int32_t, int>> members;
  for (int r = 0; r < comm->nranks; ++r) {
    int32_t ck[2];
    std::memcpy(ck, all.data() + size_t(r) * ncclsim::kBlobBytes, sizeof(ck));
    if (ck[0] == color) members.emplace_back(ck[1], r);
  }
  std::sort(members.begin(), members.end());
  int newrank = 0;
  while (members[size_t(newrank)].second != comm->rank) ++newrank;
  ncclUniqueId id = ncclsim::deriveUniqueId(comm->id_hash, 1, index, uint64_t(uint32_t(color)));
  return createChild(comm, id, int(members.size()), newrank, newcomm, config);
}

ncclResult_t pncclCommShrink(ncclComm_t comm, int* excludeRanksList, int excludeRanksCount,
                             ncclComm_t* newcomm, ncclConfig_t* config, int shrinkFlags) {
  if (comm == nullptr || newcomm == nullptr || excludeRanksCount < 0 ||
      (excludeRanksCount > 0 && excludeRanksList == nullptr)) {
    return failWith(ncclInvalidArgument, "invalid shrink arguments");
  }
  std::vector<bool> excluded(size_t(comm->nranks), false);
  for (int i = 0; i < excludeRanksCount; ++i) {
    int r = excludeRanksList[i];
    if (r < 0 || r >= comm->nranks) return failWith(ncclInvalidArgument, "invalid rank %d", r);
    excluded[size_t(r)] = true;
  }
  if (excluded[size_t(comm->rank)]) {
    return failWith(ncclInvalidArgument, "rank %d excludes itself", comm->rank);
  }
  if (shrinkFlags & NCCL_SHRINK_ABORT) comm->aborted.store(true);
  uint64_t index;
  {
    std::lock_guard<std::mutex> lock(comm->issue_mu);
    index = ++comm->shrink_count;
  }
  int newrank = 0, n = 0;
  for (int r = 0; r < comm->nranks; ++r) {
    if (excluded[size_t(r)]) continue;
    if (r == comm->rank) newrank = n;
    ++n;
  }
  ncclUniqueId id = ncclsim::deriveUniqueId(comm->id_hash, 2, index, uint64_t(excludeRanksCount));
  return createChild(comm, id, n, newrank, newcomm, config);
}

ncclResult_t pncclCommFinalize(ncclComm_t comm) {
  if (comm == nullptr) return failWith(ncclInvalidArgument, "communicator is NULL");
  ncclsim::commWaitIdle(comm);
  return ncclSuccess;
}

// Flushes outstanding work first, as NCCL's destroy finalizes a communicator not yet finalized.
ncclResult_t pncclCommDestroy(ncclComm_t comm) {
  if (comm == nullptr) return ncclSuccess;
  ncclsim::commWaitIdle(comm);
  if (!comm->destroyed.exchange(true)) {
    ncclsim::profilerCommFinalize(comm->profiler);
    ncclsim::unmapSegment(&comm->mapping);
  }
  return ncclSuccess;
}

// Returns at once: queued work is abandoned when it runs, work blocked behind a stalled stream
// stays blocked. The segment stays mapped because that work may still touch it.
ncclResult_t pncclCommAbort(ncclComm_t comm) {
  if (comm == nullptr) return ncclSuccess;
  if (!comm->aborted.exchange(true)) ncclsim::profilerCommFinalize(comm->profiler);
  return ncclSuccess;
}

ncclResult_t pncclCommRevoke(ncclComm_t comm, int revokeFlags) {
  if (comm == nullptr) return failWith(ncclInvalidArgument, "communicator is NULL");
  if (revokeFlags != NCCL_REVOKE_DEFAULT) {
    return failWith(ncclInvalidArgument, "revokeFlags must be 0");
  }
  comm->revoked.store(true);
  return ncclSuccess;
}

ncclResult_t pncclCommGetAsyncError(ncclComm_t comm, ncclResult_t* asyncError) {
  if (comm == nullptr || asyncError == nullptr) {
    return failWith(ncclInvalidArgument, "NULL argument");
  }
  if (ncclsim::commStopped(comm)) {
    *asyncError = ncclInvalidUsage;
  } else {
    *asyncError = ncclsim::commPollJoin(comm) ? ncclSuccess : ncclInProgress;
  }
  return ncclSuccess;
}

ncclResult_t pncclCommCount(const ncclComm_t comm, int* count) {
  if (comm == nullptr || count == nullptr) return failWith(ncclInvalidArgument, "NULL argument");
  *count = comm->nranks;
  return ncclSuccess;
}

ncclResult_t pncclCommCuDevice(const ncclComm_t comm, int* device) {
  if (comm == nullptr || device == nullptr) return failWith(ncclInvalidArgument, "NULL argument");
  *device = comm->cuda_dev;
  return ncclSuccess;
}

ncclResult_t pncclCommUserRank(const ncclComm_t comm, int* rank) {
  if (comm == nullptr || rank == nullptr) return failWith(ncclInvalidArgument, "NULL argument");
  *rank = comm->rank;
  return ncclSuccess;
}

}  // extern "C"

NCCLSIM_ALIAS(ncclCommInitRank)
NCCLSIM_ALIAS(ncclCommInitRankConfig)
NCCLSIM_ALIAS(ncclCommInitRankScalable)
NCCLSIM_ALIAS(ncclCommInitAll)
NCCLSIM_ALIAS(ncclCommSplit)
NCCLSIM_ALIAS(ncclCommShrink)
NCCLSIM_ALIAS(ncclCommFinalize)
NCCLSIM_ALIAS(ncclCommDestroy)
NCCLSIM_ALIAS(ncclCommAbort)
NCCLSIM_ALIAS(ncclCommRevoke)
NCCLSIM_ALIAS(ncclCommGetAsyncError)
NCCLSIM_ALIAS(ncclCommCount)
NCCLSIM_ALIAS(ncclCommCuDevice)
NCCLSIM_ALIAS(ncclCommUserRank)
