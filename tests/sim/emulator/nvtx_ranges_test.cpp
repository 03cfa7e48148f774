// The emulated libnccl.so.2 brackets its collective and point-to-point calls with NCCL 2.28.9's
// NVTX ranges, seen by an injected tool (nvtx_recording_tool.cpp) exactly as the real library
// shows them. Facts from NCCL v2.28.9-1:
// - src/include/nvtx.h, NVTX3_FUNC_WITH_PARAMS: once per call type, the schema is registered
//   (payload_schema: static type, the entries without the zero terminator, sizeof the struct,
//   id NVTX_PAYLOAD_ENTRY_TYPE_SCHEMA_ID_STATIC_START (1 << 24) + NVTX_SID_*), then the name
//   (registered_string_in<nccl_domain>{__func__}); each call pushes in the "NCCL" domain with
//   that name and one nvtxPayloadData_t, and ncclOptionalNvtxScopedRange pops at return; nothing
//   when ncclParamNvtxDisable() (NCCL_NVTX_DISABLE, src/init_nvtx.cc) is nonzero.
// - src/include/nvtx_payload_schemas.h: the struct of each call (commHash u64 at 0, bytes size_t
//   at 8, then root / peer / op as ints, Reduce's op after its root) and its entry types.
// - src/collectives.cc, ncclAllReduce .. ncclRecv: the payload is comm ? comm->commHash : 0,
//   count * ncclTypeSize(datatype), then root / peer / op, pushed before ncclEnqueueCheck looks
//   at the communicator (a NULL comm still pushes, with hash 0).
// - src/init_nvtx.cc, initNvtxRegisteredEnums (from ncclInit, src/init.cc): the reduction-op
//   enum, id (1 << 24) + 20, Sum..Avg by value, registered once at the first unique id or
//   creation.
// Each case runs in a fresh process (this binary re-run with --nvtx-child): NVTX reads its
// injection and NCCL_NVTX_DISABLE once per process.
#include <dlfcn.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "sim/emulator/comm.h"
#include "tests/sim/emulator/sim_job.h"

namespace ncclsim_test {
namespace {

constexpr uint64_t kBase = uint64_t{1} << 24;
constexpr uint64_t kRedOpType = kBase + 20;
// Entry types (nvToolsExtPayload.h): UINT64 18, SIZE 22, INT 5.
const std::string kCommEntry = "18@0:NCCL communicator ID 22@8:Message size [bytes]";
// Schema fieldMask: type, entries, numEntries, staticSize, schemaId (1<<2|1<<4|1<<5|1<<6|1<<8).
constexpr int kSchemaMask = 372;

// The child: one rank of a one-rank job makes the calls, then prints the tool's log.
int Child() {
  ncclUniqueId id;
  if (ncclGetUniqueId(&id) != ncclSuccess) return 2;
  SimJob job;
  if (!startJob(0, 1, id, &job)) return 2;
  std::printf("hash %" PRIu64 "\n", job.comm->id_hash);
  static double a[64], b[64];
  const cudaStream_t s = job.cstream();
  bool ok = ncclAllReduce(a, b, 64, ncclFloat32, ncclMax, job.comm, s) == ncclSuccess;
  ok = ok && ncclReduce(a, b, 10, ncclFloat64, ncclProd, 0, job.comm, s) == ncclSuccess;
  ok = ok && ncclBroadcast(a, b, 7, ncclInt8, 0, job.comm, s) == ncclSuccess;
  ok = ok && ncclAlltoAll(a, b, 3, ncclInt32, job.comm, s) == ncclSuccess;
  ok = ok && ncclGroupStart() == ncclSuccess;
  ok = ok && ncclSend(a, 5, ncclFloat16, 0, job.comm, s) == ncclSuccess;
  ok = ok && ncclRecv(b, 5, ncclFloat16, 0, job.comm, s) == ncclSuccess;
  ok = ok && ncclGroupEnd() == ncclSuccess;
  // Rejected for its NULL communicator, after the push.
  ok = ok && ncclAllReduce(a, b, 4, ncclInt64, ncclMin, nullptr, s) == ncclInvalidArgument;
  ok = ok && syncJob(job, 20000) && ncclCommDestroy(job.comm) == ncclSuccess;
  if (!ok) return 3;
  void* tool = dlopen(std::getenv("NVTX_INJECTION64_PATH"), RTLD_NOW | RTLD_NOLOAD);
  auto* log = tool != nullptr ? reinterpret_cast<char* (*)()>(dlsym(tool, "simnvtx_log")) : nullptr;
  if (log == nullptr) {
    std::printf("tool not loaded\n");
    return 0;
  }
  char* text = log();
  std::fputs(text, stdout);
  std::free(text);
  return 0;
}

struct ChildRun {
  int status = -1;
  std::string hash;
  std::vector<std::string> lines;  // the tool's log
};

ChildRun RunChild(const std::string& disable) {
  static int counter = 0;
  char self[4096] = {};
  EXPECT_GT(readlink("/proc/self/exe", self, sizeof self - 1), 0);
  const std::string tag = "nvtx" + std::to_string(getpid()) + "x" + std::to_string(++counter);
  const std::string cmd = "NCCLSIM_JOB_TAG=" + tag +
                          " NVTX_INJECTION64_PATH=" + SIM_NVTX_RECORDING_TOOL +
                          " NCCL_NVTX_DISABLE=" + disable + " " + self + " --nvtx-child";
  ChildRun run;
  FILE* p = popen(cmd.c_str(), "r");
  if (p == nullptr) return run;
  char line[1024];
  while (std::fgets(line, sizeof line, p) != nullptr) {
    std::string s(line);
    if (!s.empty() && s.back() == '\n') s.pop_back();
    if (s.rfind("hash ", 0) == 0) {
      run.hash = s.substr(5);
    } else {
      run.lines.push_back(s);
    }
  }
  run.status = pclose(p);
  return run;
}

std::string Schema(uint64_t sid, int entries, int size, const std::string& more) {
  return "schema NCCL mask=" + std::to_string(kSchemaMask) +
         " type=1 id=" + std::to_string(kBase + sid) + " entries=" + std::to_string(entries) +
         " size=" + std::to_string(size) + " " + kCommEntry + more;
}
std::string Push(const char* fn, uint64_t sid, int size, const std::string& values) {
  return std::string("push NCCL ") + fn + " ext n=1 id=" + std::to_string(kBase + sid) +
         " size=" + std::to_string(size) + " " + values;
}

TEST(NcclNvtxRanges, EachCallPushesNcclsRangeWithItsSchemaAndPayload) {
  const ChildRun run = RunChild("0");
  ASSERT_EQ(run.status, 0);
  ASSERT_FALSE(run.hash.empty());
  const std::string h = run.hash;
  const std::string op = " " + std::to_string(kRedOpType);
  const std::vector<std::string> expected = {
      // At ncclGetUniqueId (ncclInit): mask entries, numEntries, size, schemaId.
      "enum NCCL mask=60 id=" + std::to_string(kRedOpType) +
          " size=4 Sum=0 Product=1 Max=2 Min=3 Avg=4",
      Schema(5, 3, 24, op + "@16:Reduction operation"),  // NVTX_SID_AllReduce
      Push("ncclAllReduce", 5, 24, h + ",256,2"),        // 64 float32, ncclMax
      "pop NCCL",
      Schema(8, 4, 24, " 5@16:Root" + op + "@20:Reduction operation"),  // NVTX_SID_Reduce
      Push("ncclReduce", 8, 24, h + ",80,0,1"),  // 10 float64, root 0, ncclProd
      "pop NCCL",
      Schema(6, 3, 24, " 5@16:Root"),            // NVTX_SID_Broadcast
      Push("ncclBroadcast", 6, 24, h + ",7,0"),  // 7 int8, root 0
      "pop NCCL",
      Schema(16, 2, 16, ""),                    // NVTX_SID_AlltoAll
      Push("ncclAlltoAll", 16, 16, h + ",12"),  // 3 int32 per peer
      "pop NCCL",
      Schema(9, 3, 24, " 5@16:Peer rank"),   // NVTX_SID_Send
      Push("ncclSend", 9, 24, h + ",10,0"),  // 5 float16 to peer 0
      "pop NCCL",
      Schema(10, 3, 24, " 5@16:Peer rank"),  // NVTX_SID_Recv
      Push("ncclRecv", 10, 24, h + ",10,0"),
      "pop NCCL",
      Push("ncclAllReduce", 5, 24, "0,32,3"),  // NULL comm: hash 0; 4 int64, ncclMin
      "pop NCCL",
  };
  EXPECT_EQ(run.lines, expected);
}

TEST(NcclNvtxRanges, NcclNvtxDisableGivesNone) {
  const ChildRun run = RunChild("1");
  ASSERT_EQ(run.status, 0);
  EXPECT_EQ(run.lines, std::vector<std::string>{"tool not loaded"});
}

}  // namespace
}  // namespace ncclsim_test

int main(int argc, char** argv) {
  if (argc > 1 && std::strcmp(argv[1], "--nvtx-child") == 0) return ncclsim_test::Child();
  ::testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
