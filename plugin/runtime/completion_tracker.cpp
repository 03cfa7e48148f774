#include "plugin/runtime/completion_tracker.h"

#include "cuda/gpu_uuid.h"
#include "plugin/core/warn.h"

namespace ncclscope::plugin {

bool LoadCompletionDriver(const std::string& library, cuda::Driver* driver, std::string* error) {
  cuda::Driver d;
  if (!cuda::LoadDriverFor(cuda::kUseCompletion, library, &d, error)) return false;
  const CUresult rc = d.init(0);
  if (rc != CUDA_SUCCESS) {
    *error = "cuInit failed with CUresult " + std::to_string(static_cast<int>(rc));
    return false;
  }
  *driver = d;
  return true;
}

CompletionTracker::CompletionTracker(trace::RingWriter* ring, uint32_t event_pool,
                                     DriverLoader loader)
    : ring_(ring),
      loader_(std::move(loader)),
      events_(std::make_unique<Event[]>(event_pool)),
      event_count_(event_pool),
      free_(event_pool),
      // Records of one group share an event, so allow several hand-offs per event.
      handoff_(event_pool * 8u < 4096u ? 4096u : event_pool * 8u) {
  for (uint32_t i = 0; i < event_pool; ++i) free_.TryPush(i);
  in_flight_.reserve(handoff_.capacity());
}

CompletionTracker::~CompletionTracker() {
  if (driver_state_.load() != kReady) return;
  for (uint32_t i = 0; i < event_count_; ++i) {
    if (events_[i].event != nullptr) driver_.event_destroy(events_[i].event);
  }
}

bool CompletionTracker::Ready() noexcept {
  const int state = driver_state_.load(std::memory_order_acquire);
  if (__builtin_expect(state != kNotLoaded, 1)) return state == kReady;
  try {
    std::lock_guard<std::mutex> lock(load_mutex_);
    if (driver_state_.load(std::memory_order_relaxed) == kNotLoaded) {
      std::string error;
      cuda::Driver driver;
      const bool ok = loader_(&driver, &error);
      if (ok) {
        driver_ = driver;
      } else {
        WarnOnce(WarnKey::kCudaDriver, "device completion tracking disabled: %s", error.c_str());
      }
      driver_state_.store(ok ? kReady : kFailed, std::memory_order_release);
    }
  } catch (...) {
    driver_state_.store(kFailed, std::memory_order_release);
  }
  return driver_state_.load(std::memory_order_acquire) == kReady;
}

std::string CompletionTracker::GpuUuid(int ordinal) noexcept {
  try {
    return Ready() ? cuda::GpuUuidOf(driver_, ordinal) : std::string();
  } catch (...) {
    return {};
  }
}

int32_t CompletionTracker::RecordOn(cudaStream_t stream) noexcept {
  if (!Ready()) return -1;
  uint32_t token;
  if (!free_.TryPop(&token)) {
    ring_->CountUntrackedCompletion();
    return -1;
  }
  Event& e = events_[token];
  // An event can only be recorded on a stream of its own context; NCCL calls run in the context of
  // the communicator's device, which the caller has current.
  CUcontext ctx = nullptr;
  if (driver_.ctx_get_current(&ctx) != CUDA_SUCCESS) ctx = nullptr;
  if (e.event == nullptr || e.ctx != ctx) {
    if (e.event != nullptr) driver_.event_destroy(e.event);
    e.event = nullptr;
    if (driver_.event_create(&e.event, CU_EVENT_DISABLE_TIMING) != CUDA_SUCCESS) {
      e.event = nullptr;
      free_.TryPush(token);
      ring_->CountUntrackedCompletion();
      return -1;
    }
    e.ctx = ctx;
  }
  if (driver_.event_record(e.event, reinterpret_cast<CUstream>(stream)) != CUDA_SUCCESS) {
    free_.TryPush(token);
    ring_->CountUntrackedCompletion();
    return -1;
  }
  return static_cast<int32_t>(token);
}

void CompletionTracker::Submit(int32_t token, const uint64_t* slots, uint32_t n) noexcept {
  const auto t = static_cast<uint32_t>(token);
  if (n == 0) {
    free_.TryPush(t);
    return;
  }
  events_[t].refs.store(n, std::memory_order_relaxed);
  for (uint32_t i = 0; i < n; ++i) {
    if (!handoff_.TryPush(Handoff{slots[i], t})) {
      MarkUntracked(slots[i]);
      Unref(t);
    }
  }
}

void CompletionTracker::Abandon(const uint64_t* slots, uint32_t n) noexcept {
  for (uint32_t i = 0; i < n; ++i) MarkUntracked(slots[i]);
}

void CompletionTracker::MarkUntracked(uint64_t slot) noexcept {
  ring_->CompleteDevice(slot, trace::kDoneUntracked);
  ring_->CountUntrackedCompletion();
}

void CompletionTracker::Unref(uint32_t token) noexcept {
  if (events_[token].refs.fetch_sub(1, std::memory_order_acq_rel) == 1) free_.TryPush(token);
}

size_t CompletionTracker::PollOnce(int64_t now_ns) noexcept {
  Handoff h;
  while (in_flight_.size() < in_flight_.capacity() && handoff_.TryPop(&h)) in_flight_.push_back(h);
  size_t kept = 0;
  for (const Handoff& item : in_flight_) {
    const CUresult rc = driver_.event_query(events_[item.token].event);
    if (rc == CUDA_ERROR_NOT_READY) {
      in_flight_[kept++] = item;
      continue;
    }
    // Any other error (context destroyed, driver shutting down) means no completion will come.
    if (rc == CUDA_SUCCESS) {
      ring_->CompleteDevice(item.slot, now_ns);
    } else {
      MarkUntracked(item.slot);
    }
    Unref(item.token);
  }
  in_flight_.resize(kept);
  return kept;
}

}  // namespace ncclscope::plugin
