// The emulated NCCL as a profiler-plugin host: this executable exports its own ncclProfiler_v5 and
// v4 tables (a recording plugin) and is found through NCCL_PROFILER_PLUGIN=STATIC_PLUGIN. Each
// test runs in a forked child, with two ranks of one communicator in that process
// (ncclCommInitAll), so both ranks' events land in one list.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <mutex>
#include <thread>
#include <vector>

#include <cuda.h>
#include <nccl.h>

#include "sim/emulator/profiler_abi.h"
#include "tests/sim/emulator/child_check.h"
#include "tests/sim/emulator/rank_harness.h"

namespace pabi = ncclsim::profabi;

namespace {

struct Event {
  enum Kind { kInit, kStart, kStop, kState, kFinalize } kind;
  int ctx = -1;  // rank of the communicator (contexts are &g_ranks[rank])
  uint64_t type = 0;
  void* handle = nullptr;
  void* parent = nullptr;
  uint64_t seq = 0;        // Coll: seqNumber
  uint64_t ptimer = 0;     // KernelCh start / stop
  uint64_t comm_hash = 0;  // init
  int state = 0;
};

std::mutex g_mu;
std::vector<Event> g_events;
int g_ranks[8];
uint64_t g_handles[256];
std::atomic<int> g_next_handle{0};
int g_wanted_mask = static_cast<int>(pabi::kEvCollApi | pabi::kEvColl | pabi::kEvKernelCh);

void add(const Event& e) {
  std::lock_guard<std::mutex> lock(g_mu);
  g_events.push_back(e);
}

std::vector<Event> events() {
  std::lock_guard<std::mutex> lock(g_mu);
  return g_events;
}

int rankOf(void* ctx) {
  return ctx == nullptr ? -1 : static_cast<int>(static_cast<int*>(ctx) - g_ranks);
}

ncclResult_t initCommon(void** ctx, int* mask, uint64_t hash, int rank) {
  *ctx = &g_ranks[rank];
  *mask = g_wanted_mask;
  Event e{Event::kInit};
  e.ctx = rank;
  e.comm_hash = hash;
  add(e);
  return ncclSuccess;
}

ncclResult_t init5(void** ctx, uint64_t commId, int* mask, const char*, int, int, int rank,
                   pabi::Logger) {
  return initCommon(ctx, mask, commId, rank);
}
ncclResult_t init4(void** ctx, int* mask, const char*, uint64_t hash, int, int, int rank,
                   pabi::Logger) {
  return initCommon(ctx, mask, hash, rank);
}

void* newHandle() {
  return &g_handles[g_next_handle.fetch_add(1) % 256];
}

template <typename Descr>
ncclResult_t startCommon(void* ctx, void** handle, const Descr* d, uint64_t type) {
  *handle = newHandle();
  Event e{Event::kStart};
  e.ctx = rankOf(ctx);
  e.type = type;
  e.handle = *handle;
  e.parent = d->parentObj;
  if (type == pabi::kEvColl) e.seq = d->coll.seqNumber;
  if (type == pabi::kEvKernelCh) e.ptimer = d->kernelCh.pTimer;
  add(e);
  return ncclSuccess;
}

ncclResult_t start5(void* ctx, void** handle, pabi::Descr5* d) {
  return startCommon(ctx, handle, d, d->type);
}
ncclResult_t start4(void* ctx, void** handle, pabi::Descr4* d) {
  return startCommon(ctx, handle, d, d->type);
}
ncclResult_t stop(void* handle) {
  Event e{Event::kStop};
  e.handle = handle;
  add(e);
  return ncclSuccess;
}
ncclResult_t record(void* handle, int state, pabi::StateArgs* args) {
  Event e{Event::kState};
  e.handle = handle;
  e.state = state;
  e.ptimer = args != nullptr ? args->kernelCh.pTimer : 0;
  add(e);
  return ncclSuccess;
}
ncclResult_t finalize(void* ctx) {
  Event e{Event::kFinalize};
  e.ctx = rankOf(ctx);
  add(e);
  return ncclSuccess;
}

}  // namespace

extern "C" __attribute__((visibility("default")))
const pabi::Table5 ncclProfiler_v5 = {"test-recorder", init5, start5, stop, record, finalize};
extern "C" __attribute__((visibility("default")))
const pabi::Table4 ncclProfiler_v4 = {"test-recorder", init4, start4, stop, record, finalize};

namespace {

void inChild(int (*body)()) {
  auto out = ncclsim_test::runRanks(
      1, [body](int, int, const ncclUniqueId&) { return body(); }, 20000);
  const std::string failures = ncclsim_test::describeFailures(out);
  EXPECT_TRUE(failures.empty()) << failures;
}

void sleepMs(int ms) {
  std::this_thread::sleep_for(std::chrono::milliseconds(ms));
}

std::atomic<bool> g_gate_open{false};
void gate(void*) {
  while (!g_gate_open.load()) sleepMs(1);
}

int count(const std::vector<Event>& ev, Event::Kind kind, uint64_t type, int ctx) {
  int n = 0;
  for (const Event& e : ev) n += e.kind == kind && e.type == type && e.ctx == ctx;
  return n;
}

const Event* find(const std::vector<Event>& ev, Event::Kind kind, uint64_t type, int ctx) {
  for (const Event& e : ev) {
    if (e.kind == kind && e.type == type && e.ctx == ctx) return &e;
  }
  return nullptr;
}

// Two ranks of one process (ncclCommInitAll) run one allreduce inside a group, to completion.
int groupedAllReduceOnTwoRanks() {
  ncclComm_t comms[2];
  CHILD_CHECK(ncclCommInitAll(comms, 2, nullptr) == ncclSuccess);
  std::vector<float> buf(16, 1.0f);
  CHILD_CHECK(ncclGroupStart() == ncclSuccess);
  for (ncclComm_t c : comms) {
    ncclAllReduce(buf.data(), buf.data(), 16, ncclFloat32, ncclSum, c, nullptr);
  }
  CHILD_CHECK(ncclGroupEnd() == ncclSuccess);
  CHILD_CHECK(cuStreamSynchronize(nullptr) == CUDA_SUCCESS);
  return 0;
}

// Two ranks in this process; rank 1's stream is held by a host function that has not returned,
// as in the hang scenario. Rank 0's kernel starts (and waits), rank 1's only once released.
int kernelStartFollowsTheStream() {
  ncclComm_t comms[2];
  CHILD_CHECK(ncclCommInitAll(comms, 2, nullptr) == ncclSuccess);
  std::vector<Event> ev = events();
  CHILD_CHECK(count(ev, Event::kInit, 0, 0) == 1 && count(ev, Event::kInit, 0, 1) == 1);
  CHILD_CHECK(find(ev, Event::kInit, 0, 0)->comm_hash == find(ev, Event::kInit, 0, 1)->comm_hash);
  CUstream s[2];
  for (CUstream& st : s) CHILD_CHECK(cuStreamCreate(&st, 0) == CUDA_SUCCESS);
  CHILD_CHECK(cuLaunchHostFunc(s[1], gate, nullptr) == CUDA_SUCCESS);
  std::vector<float> buf[2] = {std::vector<float>(64, 1.0f), std::vector<float>(64, 2.0f)};
  for (int r = 0; r < 2; ++r) {
    CHILD_CHECK(ncclAllReduce(buf[r].data(), buf[r].data(), 64, ncclFloat32, ncclSum, comms[r],
                              reinterpret_cast<cudaStream_t>(s[r])) == ncclSuccess);
  }
  sleepMs(200);
  ev = events();
  for (int r = 0; r < 2; ++r) {
    // CollApi around the call, Coll (numbered from 0, parented to it) at enqueue.
    const Event* api = find(ev, Event::kStart, pabi::kEvCollApi, r);
    const Event* coll = find(ev, Event::kStart, pabi::kEvColl, r);
    CHILD_CHECK(api != nullptr && coll != nullptr);
    CHILD_CHECK(coll->parent == api->handle && coll->seq == 0);
  }
  const Event* started = find(ev, Event::kStart, pabi::kEvKernelCh, 0);
  CHILD_CHECK(started != nullptr);
  const Event k0 = *started;  // ev is replaced below
  CHILD_CHECK(k0.parent == find(ev, Event::kStart, pabi::kEvColl, 0)->handle);
  CHILD_CHECK(count(ev, Event::kStart, pabi::kEvKernelCh, 1) == 0);  // queued is not started
  g_gate_open.store(true);
  for (CUstream& st : s) CHILD_CHECK(cuStreamSynchronize(st) == CUDA_SUCCESS);
  ev = events();
  CHILD_CHECK(count(ev, Event::kStart, pabi::kEvKernelCh, 1) == 1);
  int kernel_stops = 0;
  for (const Event& e : ev) {
    if (e.kind == Event::kState && e.state == pabi::kStateKernelChStop && e.ptimer >= k0.ptimer)
      ++kernel_stops;
  }
  CHILD_CHECK(kernel_stops == 2);
  // A second collective gets the next number.
  for (int r = 0; r < 2; ++r) {
    ncclAllReduce(buf[r].data(), buf[r].data(), 64, ncclFloat32, ncclSum, comms[r],
                  reinterpret_cast<cudaStream_t>(s[r]));
  }
  for (CUstream& st : s) CHILD_CHECK(cuStreamSynchronize(st) == CUDA_SUCCESS);
  ev = events();
  CHILD_CHECK(count(ev, Event::kStart, pabi::kEvColl, 0) == 2);
  CHILD_CHECK(ev.size() > 0);
  uint64_t last_seq = 0;
  for (const Event& e : ev) {
    if (e.kind == Event::kStart && e.type == pabi::kEvColl && e.ctx == 0) last_seq = e.seq;
  }
  CHILD_CHECK(last_seq == 1);
  for (ncclComm_t c : comms) CHILD_CHECK(ncclCommDestroy(c) == ncclSuccess);
  ev = events();
  CHILD_CHECK(count(ev, Event::kFinalize, 0, 0) == 1 && count(ev, Event::kFinalize, 0, 1) == 1);
  return 0;
}

TEST(ProfilerEvents, KernelStartFollowsTheStreamNotTheCall) {
  inChild([] {
    setenv("NCCL_PROFILER_PLUGIN", "STATIC_PLUGIN", 1);
    return kernelStartFollowsTheStream();
  });
}

// NCCLSIM_PROFILER_ABI=4: the v4 table, which has no CollApi events.
TEST(ProfilerEvents, V4TableGetsCollAndKernelEvents) {
  inChild([] {
    setenv("NCCL_PROFILER_PLUGIN", "STATIC_PLUGIN", 1);
    setenv("NCCLSIM_PROFILER_ABI", "4", 1);
    CHILD_CHECK(groupedAllReduceOnTwoRanks() == 0);
    const std::vector<Event> ev = events();
    CHILD_CHECK(count(ev, Event::kStart, pabi::kEvCollApi, 0) == 0);
    CHILD_CHECK(count(ev, Event::kStart, pabi::kEvColl, 0) == 1);
    CHILD_CHECK(count(ev, Event::kStart, pabi::kEvKernelCh, 1) == 1);
    return 0;
  });
}

// A mask without KernelCh: NCCL emits no kernel events; "none" loads nothing at all.
TEST(ProfilerEvents, MaskAndNoneAreHonoured) {
  inChild([] {
    setenv("NCCL_PROFILER_PLUGIN", "STATIC_PLUGIN", 1);
    g_wanted_mask = static_cast<int>(pabi::kEvColl);
    CHILD_CHECK(groupedAllReduceOnTwoRanks() == 0);
    const std::vector<Event> ev = events();
    CHILD_CHECK(count(ev, Event::kStart, pabi::kEvColl, 0) == 1);
    CHILD_CHECK(count(ev, Event::kStart, pabi::kEvKernelCh, 0) == 0);
    return 0;
  });
  inChild([] {
    setenv("NCCL_PROFILER_PLUGIN", "none", 1);
    ncclComm_t comms[2];
    CHILD_CHECK(ncclCommInitAll(comms, 2, nullptr) == ncclSuccess);
    CHILD_CHECK(events().empty());
    return 0;
  });
}

}  // namespace
