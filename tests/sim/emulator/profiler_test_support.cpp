#include "tests/sim/emulator/profiler_test_support.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <ctime>
#include <map>

#include "sim/emulator/profiler_abi.h"
#include "tests/sim/emulator/child_check.h"
#include "tests/sim/emulator/rank_harness.h"

namespace pabi = ncclsim::profabi;
using simrec::Event;

namespace ncclsim_test {
namespace {

constexpr size_t kN = 32;  // elements per rank or peer

int issueOne(int kind, ncclComm_t c, int r, cudaStream_t s, float* send, float* recv) {
  ncclResult_t res = ncclSuccess;
  switch (kind) {
    case 0:
      res = ncclAllReduce(send, recv, 2 * kN, ncclFloat32, ncclSum, c, s);
      break;
    case 1:
      res = ncclBroadcast(send, recv, 2 * kN, ncclFloat32, 0, c, s);
      break;
    case 2:
      res = ncclReduce(send, recv, 2 * kN, ncclFloat32, ncclSum, 0, c, s);
      break;
    case 3:
      res = ncclAllGather(send, recv, kN, ncclFloat32, c, s);
      break;
    case 4:
      res = ncclReduceScatter(send, recv, kN, ncclFloat32, ncclSum, c, s);
      break;
    case 5:
      res = ncclAlltoAll(send, recv, kN, ncclFloat32, c, s);
      break;
    case 6:
      res = ncclGather(send, recv, kN, ncclFloat32, 0, c, s);
      break;
    case 7:
      res = ncclScatter(send, recv, kN, ncclFloat32, 0, c, s);
      break;
    default:
      res = r == 0 ? ncclSend(send, 2 * kN, ncclFloat32, 1, c, s)
                   : ncclRecv(recv, 2 * kN, ncclFloat32, 0, c, s);
  }
  return res == ncclSuccess ? 0 : 1;
}

template <int K>
int issueK(ncclComm_t c, int r, cudaStream_t s, float* send, float* recv) {
  return issueOne(K, c, r, s, send, recv);
}

std::map<int, Event> startsById(const std::vector<Event>& ev) {
  std::map<int, Event> m;
  for (const Event& e : ev) {
    if (e.kind == Event::kStart) m[e.id] = e;
  }
  return m;
}

bool isType(const std::map<int, Event>& m, int id, uint64_t type) {
  auto it = m.find(id);
  return it != m.end() && it->second.type == type;
}

// The event's own lines (start, states, stop) in order.
std::vector<std::string> own(const std::vector<Event>& ev, int id) {
  std::vector<std::string> l;
  for (const Event& e : ev) {
    if (e.id == id) l.push_back(simrec::describe(e).substr(simrec::describe(e).find(' ') + 1));
  }
  return l;
}

}  // namespace

IssueFn issueKind(int kind) {
  static const IssueFn fns[] = {issueK<0>, issueK<1>, issueK<2>, issueK<3>, issueK<4>,
                                issueK<5>, issueK<6>, issueK<7>, issueK<8>};
  return fns[kind];
}

int issueMixedGroup(ncclComm_t c, int r, cudaStream_t s, float* send, float* recv) {
  bool ok = ncclGroupStart() == ncclSuccess;
  ok &= ncclAllReduce(send, recv, 2 * kN, ncclFloat32, ncclSum, c, s) == ncclSuccess;
  ok &= ncclAllGather(send, recv + 2 * kN, kN / 4, ncclFloat32, c, s) == ncclSuccess;
  ok &= ncclSend(send + 4 * kN, kN, ncclFloat32, 1 - r, c, s) == ncclSuccess;
  ok &= ncclRecv(recv + 4 * kN, kN, ncclFloat32, 1 - r, c, s) == ncclSuccess;
  ok &= ncclGroupEnd() == ncclSuccess;
  return ok ? 0 : 1;
}

int TwoRanks::init() {
  CHILD_CHECK(ncclCommInitAll(comms, 2, nullptr) == ncclSuccess);
  for (int r = 0; r < 2; ++r) {
    CHILD_CHECK(cuStreamCreate(&streams[r], 0) == CUDA_SUCCESS);
    send[r].assign(8 * kN, float(r + 1));
    recv[r].assign(8 * kN, 0.0f);
  }
  return 0;
}

int TwoRanks::run(IssueFn fn) {
  for (int r = 0; r < 2; ++r) {
    CHILD_CHECK(fn(comms[r], r, reinterpret_cast<cudaStream_t>(streams[r]), send[r].data(),
                   recv[r].data()) == 0);
  }
  for (CUstream s : streams) CHILD_CHECK(cuStreamSynchronize(s) == CUDA_SUCCESS);
  return 0;
}

void inChild(const std::function<int()>& body) {
  auto out = runRanks(
      1,
      [&body](int, int, const ncclUniqueId&) {
        setenv("NCCL_PROFILER_PLUGIN", "STATIC_PLUGIN", 0);  // a test may name another
        return body();
      },
      20000);
  const std::string failures = describeFailures(out);
  EXPECT_TRUE(failures.empty()) << failures;
}

int checkParents(const std::vector<Event>& ev, int r) {
  const auto m = startsById(ev);
  for (const auto& [id, e] : m) {
    if (e.ctx != r) continue;
    switch (e.type) {
      case pabi::kEvCollApi:
      case pabi::kEvP2pApi:
      case pabi::kEvKernelLaunch:
        CHILD_CHECK(isType(m, e.parent, pabi::kEvGroupApi));
        break;
      case pabi::kEvColl:
        CHILD_CHECK(isType(m, e.parent, pabi::kEvCollApi));
        CHILD_CHECK(isType(m, e.parent_group, pabi::kEvGroup));
        break;
      case pabi::kEvP2p:
        CHILD_CHECK(isType(m, e.parent, pabi::kEvP2pApi));
        CHILD_CHECK(isType(m, e.parent_group, pabi::kEvGroup));
        break;
      case pabi::kEvKernelCh:
      case pabi::kEvProxyOp:
        CHILD_CHECK(isType(m, e.parent, pabi::kEvColl) || isType(m, e.parent, pabi::kEvP2p));
        break;
      case pabi::kEvProxyStep:
        CHILD_CHECK(isType(m, e.parent, pabi::kEvProxyOp));
        break;
      default:
        CHILD_CHECK(e.parent == -1);
    }
  }
  return 0;
}

int checkDeviceAndProxy(const std::vector<Event>& ev, int r, std::thread::id caller, int channels) {
  const auto m = startsById(ev);
  const std::vector<std::string> kernel = {"start", "state 22", "stop"};
  const std::vector<std::string> send_step = {"start", "state 8", "state 20", "state 9", "stop"};
  const std::vector<std::string> recv_step = {"start", "state 10", "state 11", "state 12", "stop"};
  for (const auto& [task_id, task] : m) {
    if (task.ctx != r || (task.type != pabi::kEvColl && task.type != pabi::kEvP2p)) continue;
    int kernel_channels = 0;
    int proxy_ops = 0;
    std::thread::id kernel_tid, proxy_tid;
    for (const auto& [id, e] : m) {
      if (e.parent != task_id) continue;
      CHILD_CHECK(e.tid != caller);
      if (e.type == pabi::kEvKernelCh) {
        kernel_channels |= 1 << e.channel;
        CHILD_CHECK(own(ev, id) == kernel);
        kernel_tid = e.tid;
        continue;
      }
      CHILD_CHECK(e.type == pabi::kEvProxyOp);
      // src/enqueue.cc hostStreamPlanTask hands proxy ops over at launch; src/proxy.cc
      // ProxyAppend starts them on the proxy thread, not on the stream that runs the kernel.
      CHILD_CHECK(proxy_tid == std::thread::id() || proxy_tid == e.tid);
      proxy_tid = e.tid;
      ++proxy_ops;
      CHILD_CHECK(e.pid == getpid() && e.root_or_peer == 1 - r && e.nsteps >= 1 && e.chunk > 0);
      if (task.type == pabi::kEvP2p) CHILD_CHECK(e.is_send == (task.func == "Send"));
      // The ProxyOp's own events: start, in progress, then (after every step stopped) stop.
      const std::vector<std::string> op_lines = own(ev, id);
      CHILD_CHECK(op_lines.size() == 3 && op_lines[1] == "state 19" && op_lines[2] == "stop");
      int steps = 0;
      for (const auto& [sid, s] : m) {
        if (s.parent != id) continue;
        CHILD_CHECK(s.tid != caller && s.step == steps);
        ++steps;
        CHILD_CHECK(own(ev, sid) == (e.is_send ? send_step : recv_step));
      }
      CHILD_CHECK(steps == e.nsteps);
    }
    // Per channel, one ProxyOp of the task's direction(s) towards the other rank; none to self.
    const bool remote = task.type == pabi::kEvColl || task.root_or_peer != r;
    // Kernel channels only where proxy ops are: a part to self has neither (src/enqueue.cc
    // addP2pToPlan, nProxyOps = selfSend ? 0 : 2; src/transport/profiler.cc profilerProxyProgress).
    CHILD_CHECK(kernel_channels == (remote ? (1 << channels) - 1 : 0));
    if (remote) CHILD_CHECK(proxy_tid != kernel_tid);
    // Broadcast and Reduce (root 0) move data one way; the other collectives both ways.
    const bool one_way = task.func == "Broadcast" || task.func == "Reduce";
    const int per_channel = task.type == pabi::kEvColl && !one_way ? 2 : 1;
    CHILD_CHECK(proxy_ops == (remote ? per_channel * channels : 0));
  }
  return 0;
}

std::string diff(const std::vector<std::string>& want, const std::vector<std::string>& got) {
  std::string s;
  for (size_t i = 0; i < std::max(want.size(), got.size()); ++i) {
    const std::string w = i < want.size() ? want[i] : "";
    const std::string g = i < got.size() ? got[i] : "";
    s +=
        (w == g ? "  " : "! ") + w + std::string(w.size() < 30 ? 30 - w.size() : 1, ' ') + g + "\n";
  }
  return s;
}

int checkSequence(const std::vector<simrec::Event>& ev, int r, std::thread::id thread,
                  const std::vector<std::string>& want, const std::string& what) {
  const std::vector<std::string> got = simrec::sequence(ev, r, thread);
  if (got == want) return 0;
  rankReport("%s, rank %d:\n%s", what.c_str(), r, diff(want, got).c_str());
  return 1;
}

uint64_t hostNowNs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return uint64_t(ts.tv_sec) * 1000000000ull + uint64_t(ts.tv_nsec);
}

}  // namespace ncclsim_test
