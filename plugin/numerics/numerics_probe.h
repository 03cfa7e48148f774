// NCCLSCOPE_NUMERICS in a job (docs/collectives.md "Numerics in a job"): for a sampled
// collective, the NaN/Inf scan of its input is launched on the caller's stream before NCCL's call
// (so an in-place operation is scanned before NCCL overwrites it) and the hash of its output after
// it (at the outermost ncclGroupEnd for a call inside a group, where NCCL launches the group's
// work); an event after them tells the background thread when the results in pinned memory are
// final, and it writes one numerics record (trace/numerics_record.h). The driver, the module and
// the pinned results are set up at the first sampled call: with the mode off nothing is loaded.
#pragma once

#include <cuda.h>
#include <nccl.h>

#include <array>
#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "collectives/numerics/numerics_kernel_args.h"
#include "cuda/driver.h"
#include "plugin/core/bounded_queue.h"
#include "plugin/core/thread_state.h"
#include "plugin/numerics/numerics_settings.h"
#include "plugin/runtime/comm_state.h"
#include "trace/numerics_record.h"
#include "trace/ring_writer.h"

namespace ncclscope::plugin {

inline constexpr uint64_t kNumericsNever = UINT64_MAX;

// One collective as the numerics passes see it.
struct NumericsCall {
  trace::OpType op = trace::OpType::kUnknown;
  const void* send = nullptr;
  void* recv = nullptr;
  size_t count = 0;  // as passed to NCCL
  int32_t dtype = -1;
  int root = -1;
  int rank = -1;  // this rank in the communicator; -1 unknown
  int nranks = -1;
  uint64_t comm_id = 0;
  cudaStream_t stream = nullptr;
};

// The probe's loader in a job: the process's table of `library` (cuda/driver.h), checked for the
// functions the passes call. False with *error naming what failed. Thread-safe.
bool LoadNumericsDriver(const std::string& library, cuda::Driver* driver, std::string* error);

class NumericsProbe {
 public:
  using DriverLoader = bool (*)(const std::string& library, cuda::Driver*, std::string*);

  // ring outlives the probe. Allocates the slot queues; loads nothing. Not thread-safe
  // (construction).
  NumericsProbe(trace::RingWriter* ring, NumericsSettings settings, std::string cuda_library,
                DriverLoader loader = LoadNumericsDriver);
  NumericsProbe(const NumericsProbe&) = delete;
  NumericsProbe& operator=(const NumericsProbe&) = delete;

  const NumericsSettings& settings() const { return settings_; }

  // Hot path: whether this call of `op` on cs is sampled; advances cs's countdown. Every rank
  // counts the same calls of the sampled operations, so every rank samples the same collectives.
  // Lock-free; one thread per communicator at a time (NCCL's rule).
  bool Sample(CommState& cs, trace::OpType op) noexcept {
    if (!settings_.SamplesOp(op)) return false;
    uint64_t left = cs.numerics_left.load(std::memory_order_relaxed);
    if (__builtin_expect(left == 0, 0)) left = FirstCountdown(cs);
    if (left == kNumericsNever) return false;
    if (left > 1) {
      cs.numerics_left.store(left - 1, std::memory_order_relaxed);
      return false;
    }
    cs.numerics_left.store(settings_.every, std::memory_order_relaxed);
    return true;
  }

  // A sampled call, before NCCL's: takes a result slot and launches the scan. Returns the slot
  // (>= 0) that After consumes, or -1 when the passes cannot run (counted as skipped) or this
  // rank's call has nothing to scan or hash (nothing loaded or taken, not counted). Thread-safe.
  int32_t Before(const NumericsCall& call) noexcept;
  // After NCCL's call returned: seq is the collective's sequence number (0 when NCCL rejected it:
  // no record). Outside a group the hash is launched now; inside one it waits in ts for
  // AtOutermostGroupEnd. Consumes slot. Thread-safe (ts is the caller's).
  void After(int32_t slot, uint64_t seq, bool in_group, ThreadState& ts) noexcept;
  // After the outermost ncclGroupEnd (launched: NCCL ran the group's work) on the calling thread.
  void AtOutermostGroupEnd(ThreadState& ts, bool launched) noexcept;

  // Writes the records of sampled calls whose passes finished. Call from one thread only (the
  // background thread, or the exit hook once that thread has left).
  void Poll(int64_t now_ns) noexcept;

  // Numerics records written so far, and those whose input held a NaN or Inf: the watchdog looks
  // at the job when they change. Thread-safe.
  uint64_t written() const noexcept { return written_.load(std::memory_order_relaxed); }
  uint64_t poisoned() const noexcept { return poisoned_.load(std::memory_order_relaxed); }

 private:
  static constexpr uint32_t kSlots = 256;
  static constexpr uint32_t kMaxContexts = 8;

  struct alignas(64) PinnedResult {
    collectives::NumericScanResult scan;
    collectives::ContentHashResult hash;
  };
  struct Slot {
    CUevent event = nullptr;
    CUcontext event_ctx = nullptr;
    CUstream stream = nullptr;
    const void* recv = nullptr;
    uint64_t hash_bytes = 0;
    trace::NumericsSample sample;
    bool discard = false;  // NCCL rejected the call: no record
    bool want_hash = false;
  };
  struct Module {
    CUcontext ctx = nullptr;
    CUfunction scan[6] = {};
    CUfunction hash = nullptr;
    uint32_t multiprocessors = 1;
  };

  uint64_t FirstCountdown(CommState& cs) noexcept;
  bool EnsureLoaded() noexcept;
  bool LoadSlow() noexcept;
  const Module* ModuleOf(CUcontext ctx) noexcept;
  bool Launch(CUfunction fn, const Module& m, uint64_t bytes, void* args, CUstream stream) noexcept;
  void LaunchHash(Slot& s, const Module* m) noexcept;
  void Finish(uint32_t index) noexcept;
  void Release(uint32_t index) noexcept;
  void Skip(uint32_t index) noexcept;

  trace::RingWriter* ring_;
  const NumericsSettings settings_;
  const std::string cuda_library_;
  DriverLoader loader_;
  cuda::Driver driver_;
  enum : int { kNotLoaded, kReady, kFailed };
  std::atomic<int> state_{kNotLoaded};
  std::mutex load_mutex_;  // loading the driver and modules: first sampled call per context only
  PinnedResult* pinned_ = nullptr;
  CUdeviceptr pinned_device_ = 0;
  std::array<Module, kMaxContexts> modules_;
  std::atomic<uint32_t> module_count_{0};
  std::unique_ptr<Slot[]> slots_;
  BoundedQueue<uint32_t> free_;
  BoundedQueue<uint32_t> handoff_;
  std::vector<uint32_t> in_flight_;  // poller only; reserved up front
  std::atomic<uint64_t> written_{0};
  std::atomic<uint64_t> poisoned_{0};
};

}  // namespace ncclscope::plugin
