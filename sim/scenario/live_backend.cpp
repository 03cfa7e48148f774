#include "sim/scenario/live_backend.h"

#include <fmt/format.h>

#include <chrono>
#include <thread>

#include "sim/emulator/driver_faults.h"
#include "sim/emulator/kernel_activity.h"
#include "sim/emulator/ncclsim_control.h"
#include "sim/scenario/cu_error.h"
#include "sim/scenario/fault_actions.h"
#include "sim/scenario/rank_bootstrap.h"

namespace ncclscope::sim {

bool LiveBackend::setupDevice(int local_rank, std::string& error) {
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

CUresult LiveBackend::streamCreate(CUstream* stream) {
  return cuStreamCreate(stream, CU_STREAM_NON_BLOCKING);
}
CUresult LiveBackend::streamSynchronize(CUstream stream) {
  return cuStreamSynchronize(stream);
}
CUresult LiveBackend::streamDestroy(CUstream stream) {
  return cuStreamDestroy(stream);
}
CUresult LiveBackend::blockStream(CUstream stream, const std::string& why) {
  return sim::blockStream(stream, why);
}
bool LiveBackend::beginCapture(CUstream stream, std::string& error) {
  const CUresult rc = cuStreamBeginCapture(stream, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL);
  if (rc != CUDA_SUCCESS) error = "cuStreamBeginCapture: " + cuError(rc);
  return rc == CUDA_SUCCESS;
}
bool LiveBackend::endCapture(CUstream stream, std::string& error) {
  CUgraph graph = nullptr;
  CUresult rc = cuStreamEndCapture(stream, &graph);
  if (rc == CUDA_SUCCESS && graph != nullptr) rc = cuGraphDestroy(graph);
  if (rc != CUDA_SUCCESS) error = "cuStreamEndCapture: " + cuError(rc);
  return rc == CUDA_SUCCESS;
}

bool LiveBackend::publishUniqueId(const std::string& path, const ncclUniqueId& id,
                                  std::string& error) {
  return sim::publishUniqueId(path, id, error);
}
bool LiveBackend::waitUniqueId(const std::string& path, double timeout_s, ncclUniqueId& id,
                               std::string& error) {
  return sim::waitUniqueId(path, timeout_s, id, error);
}

ncclResult_t LiveBackend::getUniqueId(ncclUniqueId* id) {
  return ncclGetUniqueId(id);
}
ncclResult_t LiveBackend::commInitRankConfig(ncclComm_t* comm, int nranks, ncclUniqueId id,
                                             int rank, ncclConfig_t* config) {
  return ncclCommInitRankConfig(comm, nranks, id, rank, config);
}
ncclResult_t LiveBackend::commSplit(ncclComm_t comm, int color, int key, ncclComm_t* newcomm,
                                    ncclConfig_t* config) {
  return ncclCommSplit(comm, color, key, newcomm, config);
}
ncclResult_t LiveBackend::commDestroy(ncclComm_t comm) {
  return ncclCommDestroy(comm);
}
ncclResult_t LiveBackend::commGetAsyncError(ncclComm_t comm, ncclResult_t* async_error) {
  return ncclCommGetAsyncError(comm, async_error);
}
ncclResult_t LiveBackend::groupStart() {
  return ncclGroupStart();
}
ncclResult_t LiveBackend::groupEnd() {
  return ncclGroupEnd();
}
ncclResult_t LiveBackend::send(const void* buf, size_t count, ncclDataType_t dtype, int peer,
                               ncclComm_t comm, CUstream stream) {
  return ncclSend(buf, count, dtype, peer, comm, stream);
}
ncclResult_t LiveBackend::recv(void* buf, size_t count, ncclDataType_t dtype, int peer,
                               ncclComm_t comm, CUstream stream) {
  return ncclRecv(buf, count, dtype, peer, comm, stream);
}
ncclResult_t LiveBackend::allReduce(const void* in, void* out, size_t count, ncclDataType_t dtype,
                                    ncclRedOp_t op, ncclComm_t comm, CUstream stream) {
  return ncclAllReduce(in, out, count, dtype, op, comm, stream);
}
ncclResult_t LiveBackend::broadcast(const void* in, void* out, size_t count, ncclDataType_t dtype,
                                    int root, ncclComm_t comm, CUstream stream) {
  return ncclBroadcast(in, out, count, dtype, root, comm, stream);
}
ncclResult_t LiveBackend::reduce(const void* in, void* out, size_t count, ncclDataType_t dtype,
                                 ncclRedOp_t op, int root, ncclComm_t comm, CUstream stream) {
  return ncclReduce(in, out, count, dtype, op, root, comm, stream);
}
ncclResult_t LiveBackend::allGather(const void* in, void* out, size_t count, ncclDataType_t dtype,
                                    ncclComm_t comm, CUstream stream) {
  return ncclAllGather(in, out, count, dtype, comm, stream);
}
ncclResult_t LiveBackend::reduceScatter(const void* in, void* out, size_t count,
                                        ncclDataType_t dtype, ncclRedOp_t op, ncclComm_t comm,
                                        CUstream stream) {
  return ncclReduceScatter(in, out, count, dtype, op, comm, stream);
}
ncclResult_t LiveBackend::allToAll(const void* in, void* out, size_t count, ncclDataType_t dtype,
                                   ncclComm_t comm, CUstream stream) {
  return ncclAlltoAll(in, out, count, dtype, comm, stream);
}
ncclResult_t LiveBackend::gather(const void* in, void* out, size_t count, ncclDataType_t dtype,
                                 int root, ncclComm_t comm, CUstream stream) {
  return ncclGather(in, out, count, dtype, root, comm, stream);
}
ncclResult_t LiveBackend::scatter(const void* in, void* out, size_t count, ncclDataType_t dtype,
                                  int root, ncclComm_t comm, CUstream stream) {
  return ncclScatter(in, out, count, dtype, root, comm, stream);
}
ncclResult_t LiveBackend::redOpCreatePreMulSum(ncclRedOp_t* op, void* scalar, ncclDataType_t dtype,
                                               ncclScalarResidence_t residence, ncclComm_t comm) {
  return ncclRedOpCreatePreMulSum(op, scalar, dtype, residence, comm);
}
ncclResult_t LiveBackend::redOpDestroy(ncclRedOp_t op, ncclComm_t comm) {
  return ncclRedOpDestroy(op, comm);
}

void LiveBackend::sleepMs(double ms) {
  std::this_thread::sleep_for(std::chrono::duration<double, std::milli>(ms));
}
void LiveBackend::computeMs(double ms) {
  ncclsimRunComputeKernel("sim_compute_step", ms);
}
void LiveBackend::setLinkSlowdown(double factor) {
  ncclsimSetLinkSlowdown(factor);
}
void LiveBackend::setLinkHung() {
  ncclsimSetLinkHung(1);
}
void LiveBackend::setIpcOpenFails() {
  ncclsimSetIpcOpenFails(1);
}
void LiveBackend::setDeviceMemoryLimit(size_t bytes) {
  ncclsimSetDeviceMemoryLimit(bytes);
}
void LiveBackend::flipNextOutputBit(uint64_t bit) {
  ncclsimFlipNextOutputBit(bit);
}
void LiveBackend::blockForever(const std::string& why) {
  sim::blockForever(why);
}
void LiveBackend::crash(CrashMode mode, const std::string& why) {
  crashNow(mode, why);
}
void LiveBackend::freeze(const std::string& why) {
  freezeNow(why);
}
void LiveBackend::exitEarly(const std::string& why) {
  sim::exitEarly(why);
}

}  // namespace ncclscope::sim
