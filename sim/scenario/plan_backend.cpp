#include "sim/scenario/plan_backend.h"

#include <cstdint>
#include <cstring>

#include "sim/scenario/fault_actions.h"
#include "trace/nccl_names.h"
#include "trace/record.h"

namespace ncclscope::sim {
namespace {

using trace::OpType;

const char* name(OpType op) {
  return trace::OpTypeName(op);
}

// Built-in reductions as the trace spells them; created ones without the library's number.
std::string redopName(ncclRedOp_t op) {
  return static_cast<int>(op) < static_cast<int>(ncclNumOps) ? trace::RedOpName(op) : "premulsum";
}

uint32_t idIndex(const ncclUniqueId& id) {
  uint32_t index = 0;
  std::memcpy(&index, id.internal, sizeof index);
  return index;
}

ncclUniqueId makeId(uint32_t index) {
  ncclUniqueId id{};
  std::memcpy(id.internal, &index, sizeof index);
  return id;
}

}  // namespace

ncclComm_t PlanBackend::newComm(const ncclConfig_t* config) {
  comms_.push_back(config != nullptr && config->commName != nullptr ? config->commName : "");
  return reinterpret_cast<ncclComm_t>(&comms_.back());
}

const std::string& PlanBackend::nameOf(ncclComm_t comm) {
  return *reinterpret_cast<const std::string*>(comm);
}

void PlanBackend::position(int step, int op) {
  step_ = step;
  op_ = op;
}

nlohmann::ordered_json& PlanBackend::call(const char* op, ncclComm_t comm) {
  const std::string comm_name = comm != nullptr ? nameOf(comm) : "";
  lines_.push_back(
      {{"type", "call"}, {"step", step_}, {"op_index", op_}, {"op", op}, {"comm", comm_name}});
  return lines_.back();
}

nlohmann::ordered_json& PlanBackend::collective(const char* op, size_t count, ncclDataType_t dtype,
                                                ncclComm_t comm) {
  nlohmann::ordered_json& j = call(op, comm);
  j["count"] = count;
  j["dtype"] = trace::DataTypeName(dtype);
  return j;
}

void PlanBackend::stop(const std::string& why) {
  throw PlanStopped(why);
}

CUresult PlanBackend::streamCreate(CUstream* stream) {
  streams_.emplace_back();
  *stream = reinterpret_cast<CUstream>(&streams_.back());
  return CUDA_SUCCESS;
}

CUresult PlanBackend::streamSynchronize(CUstream stream) {
  if (blocked_.count(stream) != 0) stop("a stream blocked by a hang fault never drains");
  if (lines_.size() > hung_from_) stop("a rank whose links are hung never gets its sends through");
  return CUDA_SUCCESS;
}

void PlanBackend::setLinkHung() {
  if (hung_from_ == SIZE_MAX) hung_from_ = lines_.size();
}

CUresult PlanBackend::blockStream(CUstream stream, const std::string& why) {
  logLine("plan: " + why + ": its stream never drains");
  blocked_.insert(stream);
  return CUDA_SUCCESS;
}

bool PlanBackend::waitUniqueId(const std::string&, double, ncclUniqueId& id, std::string&) {
  id = makeId(static_cast<uint32_t>(id_line_.size()));
  id_line_.push_back(SIZE_MAX);
  return true;
}

ncclResult_t PlanBackend::getUniqueId(ncclUniqueId* id) {
  *id = makeId(static_cast<uint32_t>(id_line_.size()));
  id_line_.push_back(lines_.size());
  call(name(OpType::kGetUniqueId), nullptr);
  return ncclSuccess;
}

ncclResult_t PlanBackend::commInitRankConfig(ncclComm_t* comm, int nranks, ncclUniqueId id,
                                             int rank, ncclConfig_t* config) {
  *comm = newComm(config);
  // The trace identifies a communicator by its unique id, so the id's call names it too.
  const uint32_t index = idIndex(id);
  if (index < id_line_.size() && id_line_[index] != SIZE_MAX) {
    lines_[id_line_[index]]["comm"] = nameOf(*comm);
  }
  nlohmann::ordered_json& j = call(name(OpType::kCommInitRankConfig), *comm);
  j["rank"] = rank;
  j["nranks"] = nranks;
  return ncclSuccess;
}

ncclResult_t PlanBackend::commSplit(ncclComm_t comm, int color, int key, ncclComm_t* newcomm,
                                    ncclConfig_t* config) {
  *newcomm = newComm(config);
  // On the parent, like the trace.
  nlohmann::ordered_json& j = call(name(OpType::kCommSplit), comm);
  j["new_comm"] = nameOf(*newcomm);
  j["color"] = color;
  j["key"] = key;
  return ncclSuccess;
}

ncclResult_t PlanBackend::commDestroy(ncclComm_t comm) {
  call(name(OpType::kCommDestroy), comm);
  return ncclSuccess;
}

// Not listed: the probe records this query only when it reports an error, which a plan never has.
ncclResult_t PlanBackend::commGetAsyncError(ncclComm_t comm, ncclResult_t* async_error) {
  *async_error = ncclSuccess;
  return ncclSuccess;
}

ncclResult_t PlanBackend::groupStart() {
  call(name(OpType::kGroupStart), nullptr);
  return ncclSuccess;
}

ncclResult_t PlanBackend::groupEnd() {
  call(name(OpType::kGroupEnd), nullptr);
  return ncclSuccess;
}

ncclResult_t PlanBackend::send(const void*, size_t count, ncclDataType_t dtype, int peer,
                               ncclComm_t comm, CUstream) {
  collective(name(OpType::kSend), count, dtype, comm)["peer"] = peer;
  return ncclSuccess;
}

ncclResult_t PlanBackend::recv(void*, size_t count, ncclDataType_t dtype, int peer, ncclComm_t comm,
                               CUstream) {
  collective(name(OpType::kRecv), count, dtype, comm)["peer"] = peer;
  return ncclSuccess;
}

ncclResult_t PlanBackend::allReduce(const void*, void*, size_t count, ncclDataType_t dtype,
                                    ncclRedOp_t op, ncclComm_t comm, CUstream) {
  collective(name(OpType::kAllReduce), count, dtype, comm)["redop"] = redopName(op);
  return ncclSuccess;
}

ncclResult_t PlanBackend::broadcast(const void*, void*, size_t count, ncclDataType_t dtype,
                                    int root, ncclComm_t comm, CUstream) {
  collective(name(OpType::kBroadcast), count, dtype, comm)["root"] = root;
  return ncclSuccess;
}

ncclResult_t PlanBackend::reduce(const void*, void*, size_t count, ncclDataType_t dtype,
                                 ncclRedOp_t op, int root, ncclComm_t comm, CUstream) {
  nlohmann::ordered_json& j = collective(name(OpType::kReduce), count, dtype, comm);
  j["redop"] = redopName(op);
  j["root"] = root;
  return ncclSuccess;
}

ncclResult_t PlanBackend::allGather(const void*, void*, size_t count, ncclDataType_t dtype,
                                    ncclComm_t comm, CUstream) {
  collective(name(OpType::kAllGather), count, dtype, comm);
  return ncclSuccess;
}

ncclResult_t PlanBackend::reduceScatter(const void*, void*, size_t count, ncclDataType_t dtype,
                                        ncclRedOp_t op, ncclComm_t comm, CUstream) {
  collective(name(OpType::kReduceScatter), count, dtype, comm)["redop"] = redopName(op);
  return ncclSuccess;
}

ncclResult_t PlanBackend::allToAll(const void*, void*, size_t count, ncclDataType_t dtype,
                                   ncclComm_t comm, CUstream) {
  collective(name(OpType::kAlltoAll), count, dtype, comm);
  return ncclSuccess;
}

ncclResult_t PlanBackend::gather(const void*, void*, size_t count, ncclDataType_t dtype, int root,
                                 ncclComm_t comm, CUstream) {
  collective(name(OpType::kGather), count, dtype, comm)["root"] = root;
  return ncclSuccess;
}

ncclResult_t PlanBackend::scatter(const void*, void*, size_t count, ncclDataType_t dtype, int root,
                                  ncclComm_t comm, CUstream) {
  collective(name(OpType::kScatter), count, dtype, comm)["root"] = root;
  return ncclSuccess;
}

ncclResult_t PlanBackend::redOpCreatePreMulSum(ncclRedOp_t* op, void*, ncclDataType_t dtype,
                                               ncclScalarResidence_t, ncclComm_t comm) {
  *op = static_cast<ncclRedOp_t>(next_redop_++);
  nlohmann::ordered_json& j = call(name(OpType::kRedOpCreatePreMulSum), comm);
  j["dtype"] = trace::DataTypeName(dtype);
  j["redop"] = redopName(*op);
  return ncclSuccess;
}

ncclResult_t PlanBackend::redOpDestroy(ncclRedOp_t op, ncclComm_t comm) {
  call(name(OpType::kRedOpDestroy), comm)["redop"] = redopName(op);
  return ncclSuccess;
}

void PlanBackend::blockForever(const std::string& why) {
  stop(why + ": blocks forever");
}

void PlanBackend::crash(CrashMode, const std::string& why) {
  stop(why);  // the runner's `why` names the mode already
}

void PlanBackend::freeze(const std::string& why) {
  stop(why + ": SIGSTOP");
}

void PlanBackend::exitEarly(const std::string& why) {
  stop(why + ": exit(0)");
}

void PlanBackend::finish(std::ostream& out, const std::string& stop_why) {
  for (const nlohmann::ordered_json& j : lines_) out << j.dump() << "\n";
  if (!stop_why.empty()) {
    out << nlohmann::ordered_json{{"type", "stop"},
                                  {"step", step_},
                                  {"op_index", op_},
                                  {"why", stop_why}}
               .dump()
        << "\n";
  }
  out.flush();
}

}  // namespace ncclscope::sim
