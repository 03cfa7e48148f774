#include "collectives/gpu_check/ipc_ranks.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>

#include "collectives/gpu_check/device_rank.h"
#include "collectives/gpu_check/moe_ipc.h"
#include "collectives/gpu_check/open_device.h"
#include "collectives/gpu_check/pipes.h"
#include "collectives/gpu_check/run_limits.h"
#include "collectives/gpu_check/test_data.h"
#include "collectives/gpu_check/twin_reference.h"
#include "collectives/twins/bounded_wait.h"

namespace ncclscope::gpu_check {
namespace {

namespace nc = collectives;

constexpr int64_t kSetUpNs = 120ll * 1000 * 1000 * 1000;  // cuInit and allocation, per process

// What a rank tells the parent after allocating: its three registered buffers' handles, and one
// registered buffer's per MoE case.
struct Hello {
  int32_t ok = 0;
  CUipcMemHandle staging{}, scratch{}, signal{};
  MoeIpcHandles moe;
  char error[200] = {};
};
// What the parent answers: every rank's handles (ok 0: a rank failed, stop).
struct Peers {
  int32_t ok = 0;
  Hello rank[nc::kMaxRanks];
};
struct Result {
  int32_t calls = 0;
  int32_t moe_calls = 0;
  int32_t wrong = 0;
  int32_t hang = 0;
  char first[300] = {};
};

void Copy(char* to, size_t cap, const std::string& s) {
  std::snprintf(to, cap, "%s", s.c_str());
}

// One rank's process: prepare, exchange handles, run every case, report, close, free.
int Rank(const Options& o, int rank, int nranks, int from_parent, int to_parent) {
  Driver cu;
  DeviceFacts facts;
  DeviceRank mem;
  MoeIpcRank moe;
  Kernels kernels;
  CUstream stream = nullptr;
  Hello hello;
  std::string error;
  std::vector<Case> cases;
  size_t bytes = nc::kPackBytes;
  const uint32_t first_epoch = 0u - o.wrap_after;
  if (LoadDriver(&cu, &error) && OpenDevice(cu, o.device, &facts, &error)) {
    cases = BuildCases(facts.gpu, nranks, o.ipc_limits);
    for (const Case& c : cases) bytes = std::max(bytes, c.bytes);
    CUresult r = CUDA_SUCCESS;
    if (LoadKernels(cu, &kernels, &error) && AllocateRank(cu, bytes, first_epoch, &mem, &error)) {
      r = cu.stream_create(&stream, CU_STREAM_NON_BLOCKING);
      if (r == CUDA_SUCCESS) r = cu.ipc_get_mem_handle(&hello.staging, mem.staging);
      if (r == CUDA_SUCCESS) r = cu.ipc_get_mem_handle(&hello.scratch, mem.scratch);
      if (r == CUDA_SUCCESS) r = cu.ipc_get_mem_handle(&hello.signal, mem.signal);
      if (r != CUDA_SUCCESS) error = "cuIpcGetMemHandle: " + ErrorText(cu, r);
      hello.ok = r == CUDA_SUCCESS ? 1 : 0;
      if (hello.ok != 0 && o.moe &&
          !PrepareMoeIpc(cu, rank, nranks, o.ipc_limits.reps, &moe, &hello.moe, &error)) {
        hello.ok = 0;
      }
    }
  }
  Copy(hello.error, sizeof(hello.error), error);
  Peers peers;
  if (!WriteFull(to_parent, &hello, sizeof(hello)) ||
      !ReadFull(from_parent, &peers, sizeof(peers), nc::MonotonicNs() + 2 * kSetUpNs) ||
      peers.ok == 0) {
    return 1;
  }
  CommView view;
  Result result;
  std::string wrong;
  for (int q = 0; q < nranks && wrong.empty(); ++q) {
    if (q == rank) {
      view.staging[q] = reinterpret_cast<unsigned char*>(mem.staging);
      view.scratch[q] = reinterpret_cast<unsigned char*>(mem.scratch);
      view.signal[q] = reinterpret_cast<nc::Signal*>(mem.signal);
      continue;
    }
    CUdeviceptr p[3] = {};
    const CUipcMemHandle* h[3] = {&peers.rank[q].staging, &peers.rank[q].scratch,
                                  &peers.rank[q].signal};
    for (int i = 0; i < 3 && wrong.empty(); ++i) {
      const CUresult r = cu.ipc_open_mem_handle(&p[i], *h[i], CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS);
      if (r != CUDA_SUCCESS) {
        wrong = "cuIpcOpenMemHandle of rank " + std::to_string(q) + ": " + ErrorText(cu, r);
      }
    }
    view.staging[q] = reinterpret_cast<unsigned char*>(p[0]);
    view.scratch[q] = reinterpret_cast<unsigned char*>(p[1]);
    view.signal[q] = reinterpret_cast<nc::Signal*>(p[2]);
  }
  if (wrong.empty()) {
    std::vector<MoeIpcHandles> moe_handles;
    for (int q = 0; q < nranks; ++q) moe_handles.push_back(peers.rank[q].moe);
    std::string why;
    if (!OpenMoePeers(cu, moe_handles.data(), &moe, &why)) wrong = why;
  }
  TwinRanks twin(nranks, bytes, first_epoch);
  std::vector<std::vector<unsigned char>> in(nranks, std::vector<unsigned char>(bytes)),
      want(nranks, std::vector<unsigned char>(bytes));
  std::vector<const unsigned char*> in_ptr;
  std::vector<unsigned char*> want_ptr;
  for (int q = 0; q < nranks; ++q) {
    in_ptr.push_back(in[q].data());
    want_ptr.push_back(want[q].data());
  }
  std::vector<unsigned char> got(bytes);
  uint32_t epoch = first_epoch;
  for (size_t i = 0; i < cases.size() && wrong.empty(); ++i) {
    const Case& c = cases[i];
    for (int rep = 0; rep < c.reps && wrong.empty(); ++rep, ++epoch) {
      for (int q = 0; q < nranks; ++q) FillInput(c, o.seed, i, rep, q, in[q].data(), c.bytes);
      CUresult r = cu.memcpy_htod(mem.input, in[rank].data(), c.bytes);
      if (r == CUDA_SUCCESS) r = cu.memset_d8(mem.output, kPoison, c.bytes);
      if (r == CUDA_SUCCESS) r = cu.ctx_synchronize();
      const RankIo io{reinterpret_cast<const unsigned char*>(mem.input),
                      reinterpret_cast<unsigned char*>(mem.output),
                      reinterpret_cast<nc::KernelStall*>(mem.stall)};
      KernelParams p = MakeParams(c, view, rank, io, epoch, o.timeout_ms * kMsToNs);
      ++result.calls;
      bool hang = false;
      std::string why = r != CUDA_SUCCESS
                            ? ErrorText(cu, r)
                            : LaunchAndWait(cu, kernels.Of(c), c.blocks, c.threads, p.Arg(), stream,
                                            mem.stall, o.timeout_ms * kMsToNs, &hang);
      result.hang = hang ? 1 : 0;
      if (why.empty()) twin.Run(c, in_ptr.data(), want_ptr.data(), &why);  // says why on failure
      if (why.empty() && cu.memcpy_dtoh(got.data(), mem.output, c.bytes) != CUDA_SUCCESS) {
        why = "downloading the output failed";
      }
      if (why.empty()) why = FirstDifference(c, got.data(), want[rank].data(), c.bytes);
      if (!why.empty()) {
        wrong = CaseName(c) + ", " + std::to_string(c.bytes) + " bytes, run " +
                std::to_string(rep) + ": " + why;
        ++result.wrong;
      }
      if (result.hang != 0) break;
    }
  }
  if (wrong.empty() && result.hang == 0) {
    const MoeIpcOutcome m =
        RunMoeIpc(cu, kernels, stream, mem.stall, o.seed, o.timeout_ms * kMsToNs, moe);
    result.moe_calls = m.calls;
    result.wrong += m.wrong;
    result.hang = m.hang ? 1 : 0;
    wrong = m.first;
  }
  Copy(result.first, sizeof(result.first), wrong);
  if (!wrong.empty()) std::printf("(b) rank %d of %d: %s\n", rank, nranks, wrong.c_str());
  std::fflush(stdout);
  WriteFull(to_parent, &result, sizeof(result));
  if (result.hang != 0) return 3;  // the context is unusable: leave without closing anything
  // Nobody unmaps before every rank is done, nobody frees before every rank unmapped.
  char step = 0;
  if (!ReadFull(from_parent, &step, 1, nc::MonotonicNs() + kSetUpNs)) return 1;
  for (int q = 0; q < nranks; ++q) {
    if (q == rank || view.staging[q] == nullptr) continue;
    cu.ipc_close_mem_handle(reinterpret_cast<CUdeviceptr>(view.staging[q]));
    if (view.scratch[q] != nullptr) {
      cu.ipc_close_mem_handle(reinterpret_cast<CUdeviceptr>(view.scratch[q]));
    }
    if (view.signal[q] != nullptr) {
      cu.ipc_close_mem_handle(reinterpret_cast<CUdeviceptr>(view.signal[q]));
    }
  }
  CloseMoePeers(cu, &moe);
  if (!WriteFull(to_parent, &step, 1) ||
      !ReadFull(from_parent, &step, 1, nc::MonotonicNs() + kSetUpNs)) {
    return 1;
  }
  FreeMoeIpc(cu, &moe);
  FreeRank(cu, &mem);
  return result.wrong == 0 ? 0 : 1;
}

struct Child {
  pid_t pid = -1;
  int to = -1, from = -1;  // the parent's ends
};

// Every child gets the message; false if one is gone.
bool Tell(const std::vector<Child>& kids, const void* msg, size_t bytes) {
  bool ok = true;
  for (const Child& k : kids) ok = WriteFull(k.to, msg, bytes) && ok;
  return ok;
}

// One process count. Returns 0, 1 or 3 and appends its line.
int RunCount(const Options& o, int nranks, std::vector<std::string>* lines) {
  std::vector<Child> kids(static_cast<size_t>(nranks));
  std::fflush(stdout);
  for (int r = 0; r < nranks; ++r) {
    int down[2], up[2];
    if (pipe(down) != 0 || pipe(up) != 0) return 1;
    const pid_t pid = fork();
    if (pid < 0) return 1;
    if (pid == 0) {
      close(down[1]);
      close(up[0]);
      for (int q = 0; q < r; ++q) {
        close(kids[q].to);
        close(kids[q].from);
      }
      std::fflush(stdout);
      _exit(Rank(o, r, nranks, down[0], up[1]));
    }
    close(down[0]);
    close(up[1]);
    kids[r] = Child{pid, down[1], up[0]};
  }
  std::string failure;
  bool hang = false;
  Peers peers;
  peers.ok = 1;
  const int64_t setup_deadline = nc::MonotonicNs() + kSetUpNs;
  for (int r = 0; r < nranks; ++r) {
    if (!ReadFull(kids[r].from, &peers.rank[r], sizeof(Hello), setup_deadline)) {
      peers.ok = 0;
      failure = "rank " + std::to_string(r) + " did not report its handles";
    } else if (peers.rank[r].ok == 0 && failure.empty()) {
      peers.ok = 0;
      failure = "rank " + std::to_string(r) + ": " + peers.rank[r].error;
    }
  }
  Tell(kids, &peers, sizeof(peers));
  int calls = 0, moe_calls = 0, wrong = 0;
  if (peers.ok != 0) {
    // Every case's runs, each bounded by the kernels' wait plus a margin: generous on purpose.
    const int64_t deadline = nc::MonotonicNs() + 30ll * 60 * 1000 * 1000 * 1000;
    for (int r = 0; r < nranks; ++r) {
      Result res;
      if (!ReadFull(kids[r].from, &res, sizeof(res), deadline)) {
        failure = failure.empty() ? "rank " + std::to_string(r) + " did not report" : failure;
        ++wrong;
        continue;
      }
      calls = std::max(calls, static_cast<int>(res.calls));
      moe_calls = std::max(moe_calls, static_cast<int>(res.moe_calls));
      wrong += res.wrong;
      hang = hang || res.hang != 0;
      if (res.first[0] != '\0' && failure.empty()) {
        failure = "rank " + std::to_string(r) + ": " + res.first;
      }
    }
    const char step = 1;
    Tell(kids, &step, 1);  // close the peers' mappings
    char echo = 0;
    for (const Child& k : kids) ReadFull(k.from, &echo, 1, nc::MonotonicNs() + kSetUpNs);
    Tell(kids, &step, 1);  // free
  }
  int worst = 0;
  for (const Child& k : kids) {
    close(k.to);
    close(k.from);
  }
  for (const Child& k : kids) {
    int status = 0;
    // A child stuck past every deadline above is ended (the check started it).
    for (int waited = 0; waitpid(k.pid, &status, WNOHANG) == 0; ++waited) {
      if (waited == 600) kill(k.pid, SIGKILL);
      usleep(100 * 1000);
    }
    const int code = WIFEXITED(status) ? WEXITSTATUS(status) : 1;
    if (code != 0 && failure.empty()) failure = "a rank exited with " + std::to_string(code);
    worst = std::max(worst, code == 3 ? 3 : code != 0 ? 1 : 0);
  }
  if (peers.ok == 0 || wrong != 0) worst = std::max(worst, 1);
  if (hang) worst = 3;
  lines->push_back("(b) " + std::to_string(nranks) +
                   " processes over CUDA IPC: " + std::to_string(calls) + " calls each" +
                   (moe_calls > 0 ? " and " + std::to_string(moe_calls) + " MoE calls" : "") +
                   ", " + std::to_string(wrong) + " wrong" +
                   (failure.empty() ? "" : " - " + failure) + (worst == 0 ? "" : "  FAILED"));
  std::printf("%s\n", lines->back().c_str());
  std::fflush(stdout);
  return worst;
}

}  // namespace

int RunIpcRanks(const Options& o, std::vector<std::string>* lines) {
  int worst = 0;
  for (int n : o.ipc_ranks) {
    worst = std::max(worst, RunCount(o, n, lines));
    if (worst == 3) break;
  }
  return worst;
}

}  // namespace ncclscope::gpu_check
