// The backend of a real run: the emulated (or real) NCCL and CUDA driver, the unique id file, real
// sleeps and real faults (fault_actions.h).
#pragma once

#include "sim/scenario/rank_backend.h"

namespace ncclscope::sim {

// Stateless apart from what NCCL and CUDA keep; see RankBackend.
class LiveBackend final : public RankBackend {
 public:
  void position(int, int) override {}
  bool movesData() const override { return true; }

  bool setupDevice(int local_rank, std::string& error) override;
  CUresult streamCreate(CUstream* stream) override;
  CUresult streamSynchronize(CUstream stream) override;
  CUresult streamDestroy(CUstream stream) override;
  CUresult blockStream(CUstream stream, const std::string& why) override;
  bool beginCapture(CUstream stream, std::string& error) override;
  bool endCapture(CUstream stream, std::string& error) override;

  bool publishUniqueId(const std::string& path, const ncclUniqueId& id,
                       std::string& error) override;
  bool waitUniqueId(const std::string& path, double timeout_s, ncclUniqueId& id,
                    std::string& error) override;

  ncclResult_t getUniqueId(ncclUniqueId* id) override;
  ncclResult_t commInitRankConfig(ncclComm_t* comm, int nranks, ncclUniqueId id, int rank,
                                  ncclConfig_t* config) override;
  ncclResult_t commSplit(ncclComm_t comm, int color, int key, ncclComm_t* newcomm,
                         ncclConfig_t* config) override;
  ncclResult_t commDestroy(ncclComm_t comm) override;
  ncclResult_t commGetAsyncError(ncclComm_t comm, ncclResult_t* async_error) override;
  ncclResult_t groupStart() override;
  ncclResult_t groupEnd() override;
  ncclResult_t send(const void* buf, size_t count, ncclDataType_t dtype, int peer, ncclComm_t comm,
                    CUstream stream) override;
  ncclResult_t recv(void* buf, size_t count, ncclDataType_t dtype, int peer, ncclComm_t comm,
                    CUstream stream) override;
  ncclResult_t allReduce(const void* in, void* out, size_t count, ncclDataType_t dtype,
                         ncclRedOp_t op, ncclComm_t comm, CUstream stream) override;
  ncclResult_t broadcast(const void* in, void* out, size_t count, ncclDataType_t dtype, int root,
                         ncclComm_t comm, CUstream stream) override;
  ncclResult_t reduce(const void* in, void* out, size_t count, ncclDataType_t dtype, ncclRedOp_t op,
                      int root, ncclComm_t comm, CUstream stream) override;
  ncclResult_t allGather(const void* in, void* out, size_t count, ncclDataType_t dtype,
                         ncclComm_t comm, CUstream stream) override;
  ncclResult_t reduceScatter(const void* in, void* out, size_t count, ncclDataType_t dtype,
                             ncclRedOp_t op, ncclComm_t comm, CUstream stream) override;
  ncclResult_t allToAll(const void* in, void* out, size_t count, ncclDataType_t dtype,
                        ncclComm_t comm, CUstream stream) override;
  ncclResult_t gather(const void* in, void* out, size_t count, ncclDataType_t dtype, int root,
                      ncclComm_t comm, CUstream stream) override;
  ncclResult_t scatter(const void* in, void* out, size_t count, ncclDataType_t dtype, int root,
                       ncclComm_t comm, CUstream stream) override;
  ncclResult_t redOpCreatePreMulSum(ncclRedOp_t* op, void* scalar, ncclDataType_t dtype,
                                    ncclScalarResidence_t residence, ncclComm_t comm) override;
  ncclResult_t redOpDestroy(ncclRedOp_t op, ncclComm_t comm) override;

  void sleepMs(double ms) override;
  void computeMs(double ms) override;
  void setLinkSlowdown(double factor) override;
  void setLinkHung() override;
  void setIpcOpenFails() override;
  void setDeviceMemoryLimit(size_t bytes) override;
  void flipNextOutputBit(uint64_t bit) override;
  [[noreturn]] void blockForever(const std::string& why) override;
  [[noreturn]] void crash(CrashMode mode, const std::string& why) override;
  void freeze(const std::string& why) override;
  [[noreturn]] void exitEarly(const std::string& why) override;
};

}  // namespace ncclscope::sim
