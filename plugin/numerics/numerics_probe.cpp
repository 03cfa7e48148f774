#include "plugin/numerics/numerics_probe.h"

#include <cstring>

#include "collectives/numerics/numerics_fatbin.h"
#include "plugin/core/warn.h"
#include "trace/nccl_names.h"

namespace ncclscope::plugin {
namespace {

namespace nc = collectives;
using trace::OpType;

// Elements of the send buffer NCCL reads on this rank (0: it reads none, or the size is unknown).
uint64_t InputElements(const NumericsCall& c) {
  const uint64_t per_rank = c.nranks > 0 ? c.count * static_cast<uint64_t>(c.nranks) : 0;
  switch (c.op) {
    case OpType::kAllReduce:
    case OpType::kReduce:
    case OpType::kAllGather:
    case OpType::kGather:
      return c.count;
    case OpType::kBroadcast:
      return c.rank == c.root ? c.count : 0;
    case OpType::kReduceScatter:
    case OpType::kAlltoAll:
      return per_rank;
    case OpType::kScatter:
      return c.rank == c.root ? per_rank : 0;
    default:
      return 0;
  }
}

// Whether the output of c is hashed, and its bytes: AllReduce, AllGather and Broadcast, whose
// outputs NCCL makes identical on every rank, and ReduceScatter, whose output is this rank's
// block (recorded, not compared). Reduce's and Gather's outputs exist on the root only.
bool OutputBytes(const NumericsCall& c, uint64_t* bytes) {
  const auto size = static_cast<uint64_t>(trace::DataTypeSize(c.dtype));
  switch (c.op) {
    case OpType::kAllReduce:
    case OpType::kBroadcast:
    case OpType::kReduceScatter:
      *bytes = c.count * size;
      return size != 0;
    case OpType::kAllGather:
      *bytes = c.nranks > 0 ? c.count * static_cast<uint64_t>(c.nranks) * size : 0;
      return size != 0 && c.nranks > 0;
    default:
      return false;
  }
}

// A kernel's atomics wrote these words; the event that fired orders them before this read.
uint64_t ReadPinned(const uint64_t& word) {
  return __atomic_load_n(&word, __ATOMIC_ACQUIRE);
}

}  // namespace

bool LoadNumericsDriver(const std::string& library, cuda::Driver* driver, std::string* error) {
  return cuda::LoadDriverFor(cuda::kUseNumerics, library, driver, error);
}

NumericsProbe::NumericsProbe(trace::RingWriter* ring, NumericsSettings settings,
                             std::string cuda_library, DriverLoader loader)
    : ring_(ring),
      settings_(std::move(settings)),
      cuda_library_(std::move(cuda_library)),
      loader_(loader),
      slots_(std::make_unique<Slot[]>(kSlots)),
      free_(kSlots),
      handoff_(kSlots) {
  for (uint32_t i = 0; i < kSlots; ++i) free_.TryPush(i);
  in_flight_.reserve(kSlots);
}

uint64_t NumericsProbe::FirstCountdown(CommState& cs) noexcept {
  bool sampled = false;
  try {
    sampled = settings_.SamplesComm(cs.name, cs.id);
  } catch (...) {
    sampled = false;
  }
  const uint64_t left = sampled ? 1 : kNumericsNever;
  cs.numerics_left.store(left, std::memory_order_relaxed);
  return left;
}

bool NumericsProbe::EnsureLoaded() noexcept {
  const int s = state_.load(std::memory_order_acquire);
  if (__builtin_expect(s == kReady, 1)) return true;
  if (s == kFailed) return false;
  return LoadSlow();
}

bool NumericsProbe::LoadSlow() noexcept {
  std::lock_guard<std::mutex> lock(load_mutex_);
  if (state_.load(std::memory_order_acquire) != kNotLoaded) {
    return state_.load(std::memory_order_acquire) == kReady;
  }
  std::string error;
  bool ok = false;
  try {
    ok = loader_(cuda_library_, &driver_, &error);
  } catch (...) {
    error = "internal error";
  }
  void* host = nullptr;
  if (ok) {
    ok = driver_.mem_host_alloc(&host, sizeof(PinnedResult) * kSlots,
                                CU_MEMHOSTALLOC_PORTABLE | CU_MEMHOSTALLOC_DEVICEMAP) ==
             CUDA_SUCCESS &&
         driver_.mem_host_get_device_pointer(&pinned_device_, host, 0) == CUDA_SUCCESS;
    if (!ok) error = "cannot allocate pinned memory for the results";
  }
  if (!ok) {
    state_.store(kFailed, std::memory_order_release);
    WarnOnce(WarnKey::kNumerics, "NCCLSCOPE_NUMERICS: %s; numerics passes disabled", error.c_str());
    return false;
  }
  pinned_ = static_cast<PinnedResult*>(host);
  state_.store(kReady, std::memory_order_release);
  return true;
}

const NumericsProbe::Module* NumericsProbe::ModuleOf(CUcontext ctx) noexcept {
  const uint32_t n = module_count_.load(std::memory_order_acquire);
  for (uint32_t i = 0; i < n; ++i) {
    if (modules_[i].ctx == ctx) return &modules_[i];
  }
  std::lock_guard<std::mutex> lock(load_mutex_);
  const uint32_t now = module_count_.load(std::memory_order_relaxed);
  for (uint32_t i = 0; i < now; ++i) {
    if (modules_[i].ctx == ctx) return &modules_[i];
  }
  if (now == kMaxContexts) return nullptr;
  const nc::DeviceImage image = nc::NumericsFatbin();
  if (image.size == 0) {
    WarnOnce(WarnKey::kNumerics,
             "NCCLSCOPE_NUMERICS: this build has no device code (built without nvcc); numerics "
             "passes disabled");
    return nullptr;
  }
  Module m;
  m.ctx = ctx;
  CUmodule module = nullptr;
  bool ok = driver_.module_load_data(&module, image.data) == CUDA_SUCCESS;
  for (uint32_t f = 0; ok && f < 6; ++f) {
    ok = driver_.module_get_function(&m.scan[f], module, nc::kNumericScanKernelNames[f]) ==
         CUDA_SUCCESS;
  }
  ok = ok &&
       driver_.module_get_function(&m.hash, module, nc::kContentHashKernelName) == CUDA_SUCCESS;
  CUdevice device = 0;
  int sms = 0;
  if (ok && driver_.ctx_get_device(&device) == CUDA_SUCCESS &&
      driver_.device_get_attribute(&sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, device) ==
          CUDA_SUCCESS &&
      sms > 0) {
    m.multiprocessors = static_cast<uint32_t>(sms);
  }
  if (!ok) {
    WarnOnce(WarnKey::kNumerics,
             "NCCLSCOPE_NUMERICS: cannot load the numerics kernels in this CUDA context; its "
             "collectives are not checked");
    return nullptr;
  }
  modules_[now] = m;
  module_count_.store(now + 1, std::memory_order_release);
  return &modules_[now];
}

bool NumericsProbe::Launch(CUfunction fn, const Module& m, uint64_t bytes, void* args,
                           CUstream stream) noexcept {
  const nc::NumericsLaunch shape = nc::NumericsLaunchShape(bytes, m.multiprocessors);
  void* params[1] = {args};
  return driver_.launch_kernel(fn, shape.blocks, 1, 1, shape.threads, 1, 1, 0, stream, params,
                               nullptr) == CUDA_SUCCESS;
}

int32_t NumericsProbe::Before(const NumericsCall& call) noexcept {
  // What this rank's call gives the passes, decided before anything is loaded or taken: a call
  // with nothing to scan or hash (a broadcast's non-root in nan mode, integers) costs nothing.
  nc::NumericFormat format = nc::NumericFormat::kInteger;
  const uint64_t elements = settings_.scan ? InputElements(call) : 0;
  const bool scan = elements > 0 && nc::NumericFormatOf(call.dtype, &format) &&
                    format != nc::NumericFormat::kInteger;
  uint64_t hash_bytes = 0;
  const bool hash = settings_.hash && OutputBytes(call, &hash_bytes);
  if (!scan && !hash) return -1;
  uint32_t index = 0;
  if (!EnsureLoaded() || !free_.TryPop(&index)) {
    ring_->CountNumericsSkipped();
    return -1;
  }
  Slot& s = slots_[index];
  auto stream = reinterpret_cast<CUstream>(call.stream);
  CUcontext ctx = nullptr;
  CUstreamCaptureStatus capture = CU_STREAM_CAPTURE_STATUS_NONE;
  // A call captured into a CUDA graph runs at every replay, long after this slot is reused.
  if (driver_.ctx_get_current(&ctx) != CUDA_SUCCESS || ctx == nullptr ||
      driver_.stream_is_capturing(stream, &capture) != CUDA_SUCCESS ||
      capture != CU_STREAM_CAPTURE_STATUS_NONE) {
    Skip(index);
    return -1;
  }
  const Module* m = ModuleOf(ctx);
  if (m == nullptr) {
    Skip(index);
    return -1;
  }
  if (s.event_ctx != ctx) {
    if (s.event != nullptr) driver_.event_destroy(s.event);
    s.event = nullptr;
    s.event_ctx = nullptr;
    if (driver_.event_create(&s.event, CU_EVENT_DISABLE_TIMING) != CUDA_SUCCESS) {
      s.event = nullptr;
      Skip(index);
      return -1;
    }
    s.event_ctx = ctx;
  }
  s.stream = stream;
  s.recv = call.recv;
  s.discard = false;
  s.sample = trace::NumericsSample{};
  s.sample.comm_id = call.comm_id;
  s.sample.op = call.op;
  s.sample.dtype = call.dtype;
  s.hash_bytes = hash_bytes;
  s.want_hash = hash;
  PinnedResult& out = pinned_[index];
  out.scan = nc::EmptyScan();
  out.hash = nc::ContentHashResult{0};
  if (scan) {
    nc::NumericScanArgs args{
        static_cast<const unsigned char*>(call.send), elements,
        reinterpret_cast<nc::NumericScanResult*>(pinned_device_ + index * sizeof(PinnedResult))};
    s.sample.scanned = Launch(m->scan[static_cast<uint32_t>(format) - 1], *m,
                              elements * nc::ElementBytes(format), &args, stream);
  }
  return static_cast<int32_t>(index);
}

void NumericsProbe::LaunchHash(Slot& s, const Module* m) noexcept {
  if (m == nullptr || !s.want_hash) return;
  const auto index = static_cast<uint64_t>(&s - slots_.get());
  nc::ContentHashArgs args{
      static_cast<const unsigned char*>(s.recv), s.hash_bytes,
      reinterpret_cast<nc::ContentHashResult*>(pinned_device_ + offsetof(PinnedResult, hash) +
                                               index * sizeof(PinnedResult))};
  s.sample.hashed = Launch(m->hash, *m, s.hash_bytes, &args, s.stream);
  if (s.sample.hashed) {
    s.sample.hash_bytes = s.hash_bytes;
    s.sample.hash_version = collectives::kContentHashVersion;
  }
}

void NumericsProbe::After(int32_t slot, uint64_t seq, bool in_group, ThreadState& ts) noexcept {
  if (slot < 0) return;
  const auto index = static_cast<uint32_t>(slot);
  Slot& s = slots_[index];
  s.sample.seq = seq;
  s.discard = seq == 0;
  if (s.discard || !s.want_hash) {
    Finish(index);
    return;
  }
  if (!in_group) {
    LaunchHash(s, ModuleOf(s.event_ctx));
    Finish(index);
    return;
  }
  if (ts.numerics_deferred_count == kMaxNumericsInGroup) {
    // Its scan is still reported; the hash would run before the group's work: none.
    ring_->CountNumericsSkipped();
    Finish(index);
    return;
  }
  ts.numerics_deferred[ts.numerics_deferred_count++] = static_cast<uint16_t>(index);
}

void NumericsProbe::AtOutermostGroupEnd(ThreadState& ts, bool launched) noexcept {
  for (uint32_t i = 0; i < ts.numerics_deferred_count; ++i) {
    const uint32_t index = ts.numerics_deferred[i];
    Slot& s = slots_[index];
    // A group that launched nothing leaves the outputs as they were: nothing to hash.
    if (launched) {
      LaunchHash(s, ModuleOf(s.event_ctx));
    } else {
      s.discard = true;
    }
    Finish(index);
  }
  ts.numerics_deferred_count = 0;
}

void NumericsProbe::Finish(uint32_t index) noexcept {
  Slot& s = slots_[index];
  if (!s.sample.scanned && !s.sample.hashed) s.discard = true;
  // The event orders every pass launched for this slot before the poller reads its results.
  if (driver_.event_record(s.event, s.stream) != CUDA_SUCCESS) {
    Skip(index);
    return;
  }
  handoff_.TryPush(index);  // never full: it holds at most the kSlots slot indexes
}

void NumericsProbe::Release(uint32_t index) noexcept {
  free_.TryPush(index);  // never full, likewise
}

void NumericsProbe::Skip(uint32_t index) noexcept {
  ring_->CountNumericsSkipped();
  Release(index);
}

void NumericsProbe::Poll(int64_t now_ns) noexcept {
  if (state_.load(std::memory_order_acquire) != kReady) return;
  uint32_t index = 0;
  while (handoff_.TryPop(&index)) in_flight_.push_back(index);
  size_t kept = 0;
  for (const uint32_t i : in_flight_) {
    Slot& s = slots_[i];
    const CUresult q = driver_.event_query(s.event);
    if (q == CUDA_ERROR_NOT_READY) {
      in_flight_[kept++] = i;
      continue;
    }
    if (q != CUDA_SUCCESS) {
      Skip(i);
      continue;
    }
    if (!s.discard) {
      trace::NumericsSample sample = s.sample;
      const PinnedResult& r = pinned_[i];
      sample.nan_count = ReadPinned(r.scan.nan_count);
      sample.inf_count = ReadPinned(r.scan.inf_count);
      sample.first_nonfinite = ReadPinned(r.scan.first_nonfinite);
      sample.hash = ReadPinned(r.hash.sum);
      trace::RecordData d = trace::EncodeNumerics(sample);
      d.t_enter_ns = d.t_exit_ns = now_ns;
      ring_->Append(d, false);
      written_.fetch_add(1, std::memory_order_relaxed);
      if (sample.Poisoned()) poisoned_.fetch_add(1, std::memory_order_relaxed);
    }
    Release(i);
  }
  in_flight_.resize(kept);
}

}  // namespace ncclscope::plugin
