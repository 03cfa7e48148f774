// Everything a rank does to the world outside its own memory: NCCL calls, CUDA streams, the unique
// id exchange, compute time and the process-level effects of faults. The rank runner issues all of
// it through this interface, so `ncclscope-sim-rank --plan` (plan_backend.h) lists exactly the
// calls a live run (live_backend.h) makes: one code path decides what is called, in which order.
#pragma once

#include <cuda.h>
#include <nccl.h>

#include <cstdint>
#include <string>

#include "sim/scenario/scenario.h"

namespace ncclscope::sim {

// NCCL methods mirror nccl.h one to one (same arguments, same results). Not thread-safe; one per
// rank process, used by its main thread.
class RankBackend {
 public:
  virtual ~RankBackend() = default;

  // Where the runner is, for the plan's benefit: global step, op within it; -1 = outside steps.
  virtual void position(int step, int op) = 0;
  // False when buffers are not really moved, so results must not be checked.
  virtual bool movesData() const = 0;

  // Makes a device context current (device = local rank modulo device count). Returns false and
  // sets `error` on failure.
  virtual bool setupDevice(int local_rank, std::string& error) = 0;
  virtual CUresult streamCreate(CUstream* stream) = 0;
  virtual CUresult streamSynchronize(CUstream stream) = 0;
  virtual CUresult streamDestroy(CUstream stream) = 0;
  // The hang fault: a host function that never returns, enqueued on the stream.
  virtual CUresult blockStream(CUstream stream, const std::string& why) = 0;
  // An op issued under stream capture (OpSpec::captured): begin before it; end after it, dropping
  // the graph (what NCCL put in it is never replayed). False with `error` naming the call.
  virtual bool beginCapture(CUstream stream, std::string& error) = 0;
  virtual bool endCapture(CUstream stream, std::string& error) = 0;

  // Rank 0 publishes the world's unique id; the others wait for it (bounded).
  virtual bool publishUniqueId(const std::string& path, const ncclUniqueId& id,
                               std::string& error) = 0;
  virtual bool waitUniqueId(const std::string& path, double timeout_s, ncclUniqueId& id,
                            std::string& error) = 0;

  virtual ncclResult_t getUniqueId(ncclUniqueId* id) = 0;
  virtual ncclResult_t commInitRankConfig(ncclComm_t* comm, int nranks, ncclUniqueId id, int rank,
                                          ncclConfig_t* config) = 0;
  virtual ncclResult_t commSplit(ncclComm_t comm, int color, int key, ncclComm_t* newcomm,
                                 ncclConfig_t* config) = 0;
  virtual ncclResult_t commDestroy(ncclComm_t comm) = 0;
  virtual ncclResult_t commGetAsyncError(ncclComm_t comm, ncclResult_t* async_error) = 0;
  virtual ncclResult_t groupStart() = 0;
  virtual ncclResult_t groupEnd() = 0;
  virtual ncclResult_t send(const void* buf, size_t count, ncclDataType_t dtype, int peer,
                            ncclComm_t comm, CUstream stream) = 0;
  virtual ncclResult_t recv(void* buf, size_t count, ncclDataType_t dtype, int peer,
                            ncclComm_t comm, CUstream stream) = 0;
  virtual ncclResult_t allReduce(const void* in, void* out, size_t count, ncclDataType_t dtype,
                                 ncclRedOp_t op, ncclComm_t comm, CUstream stream) = 0;
  virtual ncclResult_t broadcast(const void* in, void* out, size_t count, ncclDataType_t dtype,
                                 int root, ncclComm_t comm, CUstream stream) = 0;
  virtual ncclResult_t reduce(const void* in, void* out, size_t count, ncclDataType_t dtype,
                              ncclRedOp_t op, int root, ncclComm_t comm, CUstream stream) = 0;
  virtual ncclResult_t allGather(const void* in, void* out, size_t count, ncclDataType_t dtype,
                                 ncclComm_t comm, CUstream stream) = 0;
  virtual ncclResult_t reduceScatter(const void* in, void* out, size_t count, ncclDataType_t dtype,
                                     ncclRedOp_t op, ncclComm_t comm, CUstream stream) = 0;
  virtual ncclResult_t allToAll(const void* in, void* out, size_t count, ncclDataType_t dtype,
                                ncclComm_t comm, CUstream stream) = 0;
  virtual ncclResult_t gather(const void* in, void* out, size_t count, ncclDataType_t dtype,
                              int root, ncclComm_t comm, CUstream stream) = 0;
  virtual ncclResult_t scatter(const void* in, void* out, size_t count, ncclDataType_t dtype,
                               int root, ncclComm_t comm, CUstream stream) = 0;
  virtual ncclResult_t redOpCreatePreMulSum(ncclRedOp_t* op, void* scalar, ncclDataType_t dtype,
                                            ncclScalarResidence_t residence, ncclComm_t comm) = 0;
  virtual ncclResult_t redOpDestroy(ncclRedOp_t op, ncclComm_t comm) = 0;

  // Waits ms (a delayed join, say).
  virtual void sleepMs(double ms) = 0;
  // Compute time of a step: a live rank runs it as an emulated GPU kernel the host waits for, so
  // the emulated CUPTI reports it; the plan lists it as a sleep.
  virtual void computeMs(double ms) { sleepMs(ms); }
  // The slow_link fault: the emulator's transfers of this rank take `factor` times longer.
  virtual void setLinkSlowdown(double factor) = 0;
  // The hung_link fault: from now on nothing this rank sends arrives (ncclsimSetLinkHung).
  virtual void setLinkHung() = 0;
  // The ipc_open_fails fault: from now on this rank's cuIpcOpenMemHandle fails.
  virtual void setIpcOpenFails() = 0;
  // The device_memory_limit fault: this rank's device allocations fail past `bytes` in all.
  virtual void setDeviceMemoryLimit(size_t bytes) = 0;
  // The flip_output fault: the next collective returns bit `bit` of its output inverted
  // (ncclsimFlipNextOutputBit); called right before that collective is issued.
  virtual void flipNextOutputBit(uint64_t bit) = 0;
  // Faults on the process (fault_actions.h). Each logs what it injects; the plan backend ends the
  // plan there instead (by throwing PlanStopped), since the live rank issues nothing after them.
  [[noreturn]] virtual void blockForever(const std::string& why) = 0;
  [[noreturn]] virtual void crash(CrashMode mode, const std::string& why) = 0;
  virtual void freeze(const std::string& why) = 0;
  [[noreturn]] virtual void exitEarly(const std::string& why) = 0;
};

}  // namespace ncclscope::sim
