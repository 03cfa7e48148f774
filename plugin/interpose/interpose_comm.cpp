// Interposed communicator lifecycle: creation (identity, names, comm table entry announced at the
// call's entry and completed when it returns), teardown, unique ids and asynchronous errors.
#include <nccl.h>

#include <string>

#include "plugin/accel/accel_route.h"
#include "plugin/core/export.h"
#include "plugin/core/nccl_symbols.h"
#include "plugin/core/probe_clock.h"
#include "plugin/runtime/comm_registry.h"
#include "plugin/runtime/recorder.h"
#include "trace/identity.h"
#include "trace/ring_layout.h"

namespace ncclscope::plugin {
namespace {

using trace::OpType;

bool Created(ncclResult_t r) {
  return r == ncclSuccess || r == ncclInProgress;
}

// ncclCommInitRank / InitRankConfig / InitRankScalable: a communicator from unique id bytes.
template <typename Forward>
ncclResult_t InitFromUniqueId(OpType op, ncclComm_t* comm, int nranks, int rank,
                              const void* id_bytes, size_t id_size, const ncclConfig_t* config,
                              Forward&& forward) noexcept {
  CallFrame f;
  if (!BeginCall(&f)) return forward();
  const uint64_t id = id_bytes != nullptr ? trace::CommIdFromUniqueId(id_bytes, id_size) : 0;
  CommSpec spec;
  spec.id = id;
  spec.origin = trace::kCommFromUniqueId;
  spec.rank = rank;
  spec.nranks = nranks;
  if (id != 0) {
    try {
      const uint32_t n = f.rt->root_comms.fetch_add(1, std::memory_order_relaxed);
      spec.name = CommNameFromConfig(config, "comm" + std::to_string(n));
    } catch (...) {
    }
    spec.table_entry = AnnounceComm(*f.rt, spec);
  }
  trace::RecordData d = MakeRecord(f, op, ncclSuccess);
  d.comm_id = id;
  d.aux = PackAux(rank, nranks);
  // Creation blocks until every member joins: record it now, so a rank stuck here shows it (and,
  // through the announced table entry, the communicator's name).
  const uint64_t slot = OpenHostRecord(f, d);
  const ncclResult_t r = forward();
  const int err = errno;
  if (Created(r) && comm != nullptr && *comm != nullptr && id != 0) {
    spec.complete = r == ncclSuccess;
    RegisterComm(*f.rt, *comm, spec);
    // NCCLSCOPE_ACCEL: inside the creation's record, so a member that never arrives shows here.
    if (r == ncclSuccess) SetUpAccelAtCreation(f, *comm);
  } else {
    WithdrawComm(*f.rt, spec.table_entry);
  }
  d.result = r;
  d.t_exit_ns = ProbeNowNs();
  CloseHostRecord(f, slot, d);
  EndCall(&f, err);
  return r;
}

// ncclCommSplit / ncclCommShrink: a child whose id derives from the parent's and the position of
// this split among the parent's splits (every member splits in the same order).
template <typename Forward>
ncclResult_t Derive(OpType op, ncclComm_t parent, int color, int key, uint64_t aux,
                    ncclComm_t* newcomm, const ncclConfig_t* config, Forward&& forward) noexcept {
  CallFrame f;
  if (!BeginCall(&f)) return forward();
  CommState* ps = LookupComm(f, parent);
  // Counted before the call and whatever its outcome, so ranks agree on the index.
  const uint32_t index = ps != nullptr ? ps->children.fetch_add(1) + 1 : 0;
  const bool split = op == OpType::kCommSplit;
  // A rank that splits with no color gets no child.
  const bool makes_child = ps != nullptr && (!split || color != NCCL_SPLIT_NOCOLOR);
  CommSpec spec;
  if (makes_child) {
    spec.id = split ? trace::CommIdFromSplit(ps->id, index, color)
                    : trace::CommIdFromShrink(ps->id, index);
    spec.parent_id = ps->id;
    spec.origin = split ? trace::kCommFromSplit : trace::kCommFromShrink;
    spec.split_index = index;
    spec.color = split ? color : -1;
    spec.key = split ? key : -1;
    try {
      const std::string suffix =
          split ? ".split" + std::to_string(index) + ".c" + std::to_string(color)
                : ".shrink" + std::to_string(index);
      spec.name = CommNameFromConfig(config, ps->name + suffix);
    } catch (...) {
    }
    spec.table_entry = AnnounceComm(*f.rt, spec);
  }
  trace::RecordData d = MakeRecord(f, op, ncclSuccess);
  d.comm_id = ps != nullptr ? ps->id : 0;
  d.seq = index;
  d.aux = aux;
  const uint64_t slot = OpenHostRecord(f, d);  // a split blocks until every member arrives
  const ncclResult_t r = forward();
  const int err = errno;
  if (makes_child && Created(r) && newcomm != nullptr && *newcomm != nullptr) {
    spec.complete = r == ncclSuccess;
    RegisterComm(*f.rt, *newcomm, spec);
    if (r == ncclSuccess) SetUpAccelAtCreation(f, *newcomm);
  } else {
    WithdrawComm(*f.rt, spec.table_entry);
  }
  d.result = r;
  d.t_exit_ns = ProbeNowNs();
  CloseHostRecord(f, slot, d);
  EndCall(&f, err);
  return r;
}

// Finalize, destroy, abort, revoke: calls on an existing communicator.
template <typename Forward>
ncclResult_t Teardown(OpType op, ncclComm_t comm, uint64_t aux, Forward&& forward) noexcept {
  CallFrame f;
  if (!BeginCall(&f)) return forward();
  CommState* cs = LookupComm(f, comm);
  trace::RecordData d = MakeRecord(f, op, ncclSuccess);
  d.comm_id = cs != nullptr ? cs->id : 0;
  d.aux = aux;
  // Finalize and destroy wait for outstanding work, which never ends on a hung communicator.
  const uint64_t slot = OpenHostRecord(f, d);
  // After the watchdog's ncclCommAbort (NCCLSCOPE_ON_HANG=abort) the handle is freed inside NCCL:
  // the application's error handling tearing it down again must not reach NCCL.
  const bool aborted = cs != nullptr && cs->AbortedByWatchdog();
  const ncclResult_t r = aborted ? ncclSuccess : forward();
  const int err = errno;
  // Abort frees the communicator whatever it returns; a failed destroy leaves it alive.
  if (op == OpType::kCommAbort || (op == OpType::kCommDestroy && r == ncclSuccess)) {
    ForgetComm(*f.rt, comm);
  }
  d.result = r;
  d.t_exit_ns = ProbeNowNs();
  CloseHostRecord(f, slot, d);
  EndCall(&f, err);
  return r;
}

template <typename Forward>
ncclResult_t InitAll(ncclComm_t* comms, int ndev, const int* devlist, Forward&& forward) noexcept {
  CallFrame f;
  if (!BeginCall(&f)) return forward();
  const ncclResult_t r = forward();
  const int err = errno;
  const uint32_t call = f.rt->init_all_calls.fetch_add(1, std::memory_order_relaxed) + 1;
  const uint64_t id = trace::CommIdFromInitAll(f.rt->process_nonce, call);
  if (r == ncclSuccess && comms != nullptr) {
    for (int i = 0; i < ndev; ++i) {
      if (comms[i] == nullptr) continue;
      CommSpec spec;
      spec.id = id;
      spec.origin = trace::kCommFromInitAll;
      spec.rank = i;
      spec.nranks = ndev;
      spec.cuda_device = devlist != nullptr ? devlist[i] : i;
      try {
        spec.name = "initall" + std::to_string(call);
      } catch (...) {
      }
      RegisterComm(*f.rt, comms[i], spec);
    }
  }
  trace::RecordData d = MakeRecord(f, OpType::kCommInitAll, r);
  d.comm_id = r == ncclSuccess ? id : 0;
  d.aux = static_cast<uint64_t>(ndev);
  EmitHostRecord(f, d);
  EndCall(&f, err);
  return r;
}

template <typename Forward>
ncclResult_t GetUniqueId(ncclUniqueId* unique_id, Forward&& forward) noexcept {
  CallFrame f;
  if (!BeginCall(&f)) return forward();
  const ncclResult_t r = forward();
  const int err = errno;
  trace::RecordData d = MakeRecord(f, OpType::kGetUniqueId, r);
  // Links this rank's id to the communicator later created from it on every rank.
  if (r == ncclSuccess && unique_id != nullptr) {
    d.comm_id = trace::CommIdFromUniqueId(unique_id, sizeof *unique_id);
  }
  EmitHostRecord(f, d);
  EndCall(&f, err);
  return r;
}

// Recorded only when it reports an error, and once per distinct error of a communicator, because
// watchdogs poll it in a loop.
template <typename Forward>
ncclResult_t GetAsyncError(ncclComm_t comm, ncclResult_t* async_error, Forward&& forward) noexcept {
  CallFrame f;
  if (!BeginCall(&f)) return forward();
  CommState* cs = f.rt->comms.Find(comm);
  if (cs != nullptr && cs->AbortedByWatchdog()) {
    // NCCL freed the handle; the application polling it learns the communicator failed.
    if (async_error != nullptr) *async_error = kAbortedCommResult;
    EndCall(&f, errno);
    return ncclSuccess;
  }
  const ncclResult_t r = forward();
  const int err = errno;
  const ncclResult_t reported =
      r != ncclSuccess ? r : (async_error != nullptr ? *async_error : ncclSuccess);
  if (cs != nullptr && reported == ncclSuccess) CompleteDeferredComm(*f.rt, comm, cs);
  const bool is_error = reported != ncclSuccess && reported != ncclInProgress;
  const int previous =
      cs != nullptr ? cs->last_async_error.exchange(is_error ? reported : 0) : ncclSuccess;
  if (is_error && (cs == nullptr || previous != reported)) {
    trace::RecordData d = MakeRecord(f, OpType::kCommGetAsyncError, r);
    d.comm_id = cs != nullptr ? cs->id : 0;
    d.aux = static_cast<uint64_t>(reported);
    EmitHostRecord(f, d);
  }
  EndCall(&f, err);
  return r;
}

}  // namespace
}  // namespace ncclscope::plugin

namespace np = ncclscope::plugin;
using ncclscope::trace::OpType;

NCCLSCOPE_API ncclResult_t ncclGetUniqueId(ncclUniqueId* uniqueId) {
  return np::GetUniqueId(uniqueId, NCCLSCOPE_FORWARD(GetUniqueId, uniqueId));
}

NCCLSCOPE_API ncclResult_t ncclCommInitRank(ncclComm_t* comm, int nranks, ncclUniqueId commId,
                                            int rank) {
  return np::InitFromUniqueId(OpType::kCommInitRank, comm, nranks, rank, &commId, sizeof commId,
                              nullptr, NCCLSCOPE_FORWARD(CommInitRank, comm, nranks, commId, rank));
}

NCCLSCOPE_API ncclResult_t ncclCommInitRankConfig(ncclComm_t* comm, int nranks, ncclUniqueId commId,
                                                  int rank, ncclConfig_t* config) {
  return np::InitFromUniqueId(
      OpType::kCommInitRankConfig, comm, nranks, rank, &commId, sizeof commId, config,
      NCCLSCOPE_FORWARD(CommInitRankConfig, comm, nranks, commId, rank, config));
}

NCCLSCOPE_API ncclResult_t ncclCommInitRankScalable(ncclComm_t* newcomm, int nranks, int myrank,
                                                    int nId, ncclUniqueId* commIds,
                                                    ncclConfig_t* config) {
  const size_t bytes = nId > 0 ? static_cast<size_t>(nId) * sizeof(ncclUniqueId) : 0;
  return np::InitFromUniqueId(
      OpType::kCommInitRankScalable, newcomm, nranks, myrank, bytes != 0 ? commIds : nullptr, bytes,
      config,
      NCCLSCOPE_FORWARD(CommInitRankScalable, newcomm, nranks, myrank, nId, commIds, config));
}

NCCLSCOPE_API ncclResult_t ncclCommInitAll(ncclComm_t* comm, int ndev, const int* devlist) {
  return np::InitAll(comm, ndev, devlist, NCCLSCOPE_FORWARD(CommInitAll, comm, ndev, devlist));
}

NCCLSCOPE_API ncclResult_t ncclCommSplit(ncclComm_t comm, int color, int key, ncclComm_t* newcomm,
                                         ncclConfig_t* config) {
  return np::Derive(OpType::kCommSplit, comm, color, key, np::PackAux(color, key), newcomm, config,
                    NCCLSCOPE_FORWARD(CommSplit, comm, color, key, newcomm, config));
}

NCCLSCOPE_API ncclResult_t ncclCommShrink(ncclComm_t comm, int* excludeRanksList,
                                          int excludeRanksCount, ncclComm_t* newcomm,
                                          ncclConfig_t* config, int shrinkFlags) {
  return np::Derive(OpType::kCommShrink, comm, -1, -1, np::PackAux(excludeRanksCount, shrinkFlags),
                    newcomm, config,
                    NCCLSCOPE_FORWARD(CommShrink, comm, excludeRanksList, excludeRanksCount,
                                      newcomm, config, shrinkFlags));
}

NCCLSCOPE_API ncclResult_t ncclCommFinalize(ncclComm_t comm) {
  return np::Teardown(OpType::kCommFinalize, comm, 0, NCCLSCOPE_FORWARD(CommFinalize, comm));
}

NCCLSCOPE_API ncclResult_t ncclCommDestroy(ncclComm_t comm) {
  return np::Teardown(OpType::kCommDestroy, comm, 0, NCCLSCOPE_FORWARD(CommDestroy, comm));
}

NCCLSCOPE_API ncclResult_t ncclCommAbort(ncclComm_t comm) {
  return np::Teardown(OpType::kCommAbort, comm, 0, NCCLSCOPE_FORWARD(CommAbort, comm));
}

NCCLSCOPE_API ncclResult_t ncclCommRevoke(ncclComm_t comm, int revokeFlags) {
  return np::Teardown(OpType::kCommRevoke, comm, static_cast<uint32_t>(revokeFlags),
                      NCCLSCOPE_FORWARD(CommRevoke, comm, revokeFlags));
}

NCCLSCOPE_API ncclResult_t ncclCommGetAsyncError(ncclComm_t comm, ncclResult_t* asyncError) {
  return np::GetAsyncError(comm, asyncError,
                           NCCLSCOPE_FORWARD(CommGetAsyncError, comm, asyncError));
}
