// The backend of `ncclscope-sim-rank --plan`: nothing is sent, waited for or slept; every NCCL call
// becomes one JSON line naming it the way the trace does (trace::OpTypeName, trace/nccl_names.h),
// so a rank's plan can be compared record by record with what the probe recorded.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <deque>
#include <ostream>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include "sim/scenario/rank_backend.h"

namespace ncclscope::sim {

// Thrown where a live rank would issue nothing more (crash, block forever, freeze, early exit, a
// stream that never drains): the plan ends there.
class PlanStopped : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Line formats (one JSON object per line):
//   {"type":"call","step":S,"op_index":K,"op":"allreduce","comm":"tp","count":N,"dtype":"float16",
//    "redop":"sum","root":R,"peer":P, ...}  fields only where the call has the argument
//   {"type":"stop","step":S,"op_index":K,"why":"crash at step 2 (sigkill)"}  after the last call
// step/op_index are -1 outside steps (communicator setup and teardown). Communicators are named by
// the commName their creation passed; the dynamic reduction of premulsum is "premulsum" (its number
// is the library's choice). Lines are written by finish(), because get_unique_id names the
// communicator later created from its id. Not thread-safe.
class PlanBackend final : public RankBackend {
 public:
  void position(int step, int op) override;
  bool movesData() const override { return false; }

  bool setupDevice(int, std::string&) override { return true; }
  CUresult streamCreate(CUstream* stream) override;
  CUresult streamSynchronize(CUstream stream) override;
  CUresult streamDestroy(CUstream) override { return CUDA_SUCCESS; }
  CUresult blockStream(CUstream stream, const std::string& why) override;
  bool beginCapture(CUstream, std::string&) override { return true; }
  bool endCapture(CUstream, std::string&) override { return true; }

  bool publishUniqueId(const std::string&, const ncclUniqueId&, std::string&) override {
    return true;
  }
  bool waitUniqueId(const std::string&, double, ncclUniqueId& id, std::string&) override;

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

  void sleepMs(double) override {}
  void setLinkSlowdown(double) override {}
  // Calls issued from now on wait for sends that never arrive: the step's synchronize ends the
  // plan (conservatively: an op that only receives would still complete).
  void setLinkHung() override;
  // Only ncclscope's set-up (behind the interposer) opens IPC handles: the rank's calls are alike.
  void setIpcOpenFails() override {}
  void setDeviceMemoryLimit(size_t) override {}  // the rank's own buffers are host memory
  void flipNextOutputBit(uint64_t) override {}   // changes data, not the calls
  [[noreturn]] void blockForever(const std::string& why) override;
  [[noreturn]] void crash(CrashMode mode, const std::string& why) override;
  void freeze(const std::string& why) override;
  [[noreturn]] void exitEarly(const std::string& why) override;

  // Writes every line, then a stop line when `stop_why` is not empty.
  void finish(std::ostream& out, const std::string& stop_why);

 private:
  nlohmann::ordered_json& call(const char* op, ncclComm_t comm);
  nlohmann::ordered_json& collective(const char* op, size_t count, ncclDataType_t dtype,
                                     ncclComm_t comm);
  [[noreturn]] void stop(const std::string& why);

  int step_ = -1;
  int op_ = -1;
  std::vector<nlohmann::ordered_json> lines_;
  // A fake handle is the address of its entry (a deque never moves them): a communicator's is its
  // name, a stream's a byte.
  ncclComm_t newComm(const ncclConfig_t* config);
  static const std::string& nameOf(ncclComm_t comm);
  std::deque<std::string> comms_;
  std::deque<char> streams_;
  std::set<CUstream> blocked_;
  size_t hung_from_ = SIZE_MAX;  // lines_.size() when the link hung
  std::vector<size_t> id_line_;  // per unique id handed out: its get_unique_id line, or SIZE_MAX
  int next_redop_ = ncclNumOps;
};

}  // namespace ncclscope::sim
