#include "plugin/cupti/cupti_probe.h"

#include <unistd.h>

#include <cstdlib>
#include <memory>

#include "plugin/core/probe_clock.h"
#include "plugin/core/warn.h"
#include "plugin/cupti/cupti_correlate.h"
#include "plugin/runtime/runtime.h"

namespace ncclscope::plugin {

std::atomic<const CuptiHooks*> g_cupti_hooks{nullptr};

namespace {

using trace::OpType;

constexpr size_t kBufferBytes = size_t{1} << 20;
// Buffers must be 8-byte aligned (cupti_activity.h, CUpti_BuffersCallbackRequestFunc).
constexpr size_t kBufferAlign = 8;
constexpr size_t kMaxLaunches = 65536;  // calls remembered; a kernel comes seconds after its call
constexpr size_t kMaxCorrelations = 65536;
constexpr size_t kMaxQueuedKernels = size_t{1} << 20;  // CUPTI outrunning the poller
constexpr int kMaxWaitPolls = 3;  // passes a kernel waits for its call's record to be readable

constexpr uint64_t kLossDropped = 1;
constexpr uint64_t kLossUnattributed = 2;

std::atomic<CuptiProbe*> g_probe{nullptr};

void CUPTIAPI BufferRequested(uint8_t** buffer, size_t* size, size_t* max_records) {
  *buffer = static_cast<uint8_t*>(std::aligned_alloc(kBufferAlign, kBufferBytes));
  *size = *buffer != nullptr ? kBufferBytes : 0;  // 0: CUPTI drops records, and counts them
  *max_records = 0;                               // as many as fit
}

void CUPTIAPI BufferCompleted(CUcontext ctx, uint32_t stream_id, uint8_t* buffer, size_t size,
                              size_t valid_bytes) {
  (void)size;
  CuptiProbe* probe = g_probe.load(std::memory_order_acquire);
  try {
    if (probe != nullptr && buffer != nullptr) {
      probe->OnBufferCompleted(buffer, valid_bytes, ctx, stream_id);
    }
  } catch (...) {
    // Out of memory while queueing: the buffer's kernels are lost; nothing may cross into CUPTI.
  }
  std::free(buffer);
}

bool IsLaunching(OpType op) {
  return trace::IsCollective(op) || trace::IsP2P(op) || op == OpType::kGroupEnd;
}

}  // namespace

CuptiProbe::CuptiProbe(trace::RingWriter* ring, const CuptiApi& api)
    : ring_(ring), api_(api), ring_next_(ring->header().write_pos.load()) {}

bool CuptiProbe::Enable(std::string* error) {
  CuptiProbe* expected = nullptr;
  if (!g_probe.compare_exchange_strong(expected, this)) {
    *error = "another CUPTI probe is active in this process";
    return false;
  }
  CUptiResult rc = api_.register_callbacks(BufferRequested, BufferCompleted);
  if (rc != CUPTI_SUCCESS) {
    *error = "cuptiActivityRegisterCallbacks failed: " + CuptiResultText(api_, rc);
    g_probe.store(nullptr);
    return false;
  }
  const struct {
    CUpti_ActivityKind kind;
    const char* name;
  } kinds[] = {{CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, "CONCURRENT_KERNEL"},
               {CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION, "EXTERNAL_CORRELATION"},
               {CUPTI_ACTIVITY_KIND_DRIVER, "DRIVER"}};
  for (size_t i = 0; i < std::size(kinds); ++i) {
    rc = api_.enable(kinds[i].kind);
    if (rc == CUPTI_SUCCESS) continue;
    *error = std::string("cuptiActivityEnable(") + kinds[i].name +
             ") failed: " + CuptiResultText(api_, rc);
    for (size_t k = 0; k < i; ++k) api_.disable(kinds[k].kind);
    g_probe.store(nullptr);
    return false;
  }
  static CuptiHooks hooks;
  hooks = {api_.push_external, api_.pop_external};
  g_cupti_hooks.store(&hooks, std::memory_order_release);
  return true;
}

void CuptiProbe::OnBufferCompleted(uint8_t* buffer, size_t valid_bytes, CUcontext ctx,
                                   uint32_t stream_id) {
  DecodedActivity decoded;
  DecodeActivityBuffer(api_, buffer, valid_bytes, kCuptiCorrelationKind, &decoded);
  size_t dropped = 0;
  if (api_.dropped_records(ctx, stream_id, &dropped) != CUPTI_SUCCESS) dropped = 0;
  std::lock_guard<std::mutex> lock(mu_);
  if (queued_.kernels.size() + decoded.kernels.size() > kMaxQueuedKernels) {
    queued_dropped_ += decoded.kernels.size() + dropped;
    return;
  }
  queued_dropped_ += dropped;
  queued_.kernels.insert(queued_.kernels.end(), decoded.kernels.begin(), decoded.kernels.end());
  queued_.correlations.insert(queued_.correlations.end(), decoded.correlations.begin(),
                              decoded.correlations.end());
}

void CuptiProbe::IndexRing() {
  const uint64_t end = ring_->header().write_pos.load(std::memory_order_acquire);
  if (end - ring_next_ > ring_->capacity()) ring_next_ = end - ring_->capacity();
  for (; ring_next_ < end; ++ring_next_) {
    trace::RecordData d;
    // A record still being written is read again at the next pass (its kernel waits for it).
    if (!ring_->ReadSlot(ring_next_, &d)) break;
    const auto op = static_cast<OpType>(d.op);
    if (!IsLaunching(op)) continue;
    const uint64_t key = CuptiKey(d.tid, d.t_enter_ns);
    if (launches_.emplace(key, Launch{d.comm_id, d.seq, d.group_id, d.op}).second) {
      launch_order_.push_back(key);
    }
    if (launch_order_.size() > kMaxLaunches) {
      launches_.erase(launch_order_.front());
      launch_order_.pop_front();
    }
  }
}

bool CuptiProbe::Resolve(const NcclKernelSpan& span, Launch* launch) const {
  const auto c = correlations_.find(span.kernel.correlation);
  if (c == correlations_.end()) return false;
  const auto l = launches_.find(c->second);
  if (l == launches_.end()) return false;
  *launch = l->second;
  return true;
}

void CuptiProbe::AppendCompute(const NcclKernelSpan& span, const Launch& launch) {
  trace::RecordData d{};
  d.op = static_cast<uint32_t>(OpType::kDeviceCompute);
  d.comm_id = launch.comm_id;
  d.seq = launch.seq;
  d.group_id = launch.group_id;
  d.count = span.compute_ns;
  d.peer = static_cast<int32_t>(span.compute_kernels);
  d.aux = span.kernel.start;
  d.send_buffer = span.kernel.end;
  d.recv_buffer = span.prev_end;
  d.dtype = static_cast<int32_t>(span.kernel.device);
  d.redop = static_cast<int32_t>(launch.op);
  d.stream = span.kernel.stream;
  d.t_enter_ns = d.t_exit_ns = ProbeNowNs();
  d.t_device_done_ns = trace::kDoneUntracked;
  ring_->Append(d, false);
}

void CuptiProbe::AppendLoss(uint64_t count, uint64_t why) {
  trace::RecordData d{};
  d.op = static_cast<uint32_t>(OpType::kDeviceActivityLoss);
  d.count = count;
  d.aux = why;
  d.dtype = d.redop = d.peer = -1;
  d.t_enter_ns = d.t_exit_ns = ProbeNowNs();
  d.t_device_done_ns = trace::kDoneUntracked;
  ring_->Append(d, false);
}

void CuptiProbe::Poll(bool final) {
  std::lock_guard<std::mutex> poll_lock(poll_mu_);
  // Completed buffers only: a buffer with a running kernel's record waits. At exit, everything
  // (incomplete kernel records are skipped by the decoder).
  api_.flush_all(final ? CUPTI_ACTIVITY_FLAG_FLUSH_FORCED : CUPTI_ACTIVITY_FLAG_NONE);
  DecodedActivity batch;
  uint64_t dropped = 0;
  {
    std::lock_guard<std::mutex> lock(mu_);
    std::swap(batch, queued_);
    std::swap(dropped, queued_dropped_);
  }
  if (dropped != 0) {
    dropped_total_ += dropped;
    timeline_.Lose();
    AppendLoss(dropped, kLossDropped);
  }
  for (const auto& [correlation, key] : batch.correlations) {
    if (correlations_.insert_or_assign(correlation, key).second) {
      correlation_order_.push_back(correlation);
    }
    if (correlation_order_.size() > kMaxCorrelations) {
      correlations_.erase(correlation_order_.front());
      correlation_order_.pop_front();
    }
  }
  std::vector<NcclKernelSpan> spans;
  timeline_.Add(std::move(batch.kernels), &spans);
  for (const NcclKernelSpan& s : spans) waiting_.push_back({s, 0});
  IndexRing();
  uint64_t unattributed = 0;
  std::vector<Waiting> still;
  for (Waiting& w : waiting_) {
    Launch launch{};
    if (Resolve(w.span, &launch)) {
      AppendCompute(w.span, launch);
    } else if (++w.polls >= kMaxWaitPolls) {
      ++unattributed;
    } else {
      still.push_back(w);
    }
  }
  waiting_ = std::move(still);
  if (unattributed != 0) {
    unattributed_total_ += unattributed;
    AppendLoss(unattributed, kLossUnattributed);
  }
}

std::string CuptiLibraryFor(const std::string& setting) {
  if (setting.empty() || setting == "0") return "";
  return setting == "1" ? kCuptiLibrary : setting;
}

std::unique_ptr<CuptiProbe> StartCuptiProbe(trace::RingWriter* ring, const std::string& library,
                                            std::string* error) {
  CuptiApi api;
  if (!LoadCupti(library, &api, error)) return nullptr;
  auto probe = std::make_unique<CuptiProbe>(ring, api);
  if (!probe->Enable(error)) return nullptr;
  return probe;
}

namespace {

// Written once by the background thread before the exit handler is registered.
CuptiProbe* g_started = nullptr;
pid_t g_owner = 0;

// Kernels that ended since the last pass would be lost with the process: one last pass.
void FinalPassAtExit() {
  if (g_started == nullptr || getpid() != g_owner) return;
  try {
    g_started->Poll(true);
  } catch (...) {
    // Exiting: nothing more to do.
  }
}

}  // namespace

void PollCupti(Runtime* rt) noexcept {
  // Background thread only, so these need no lock. A forked child's thread finds its parent's
  // probe here, writing to its parent's ring: it stays off (CUPTI does not follow a fork either).
  static CuptiProbe*& probe = g_started;
  static pid_t& owner = g_owner;
  static bool off = false;
  if (off) return;
  try {
    if (probe == nullptr) {
      const std::string library = CuptiLibraryFor(rt->config.cupti);
      if (library.empty()) {
        off = true;  // NCCLSCOPE_CUPTI=0
        return;
      }
      std::string error;
      std::unique_ptr<CuptiProbe> started = StartCuptiProbe(rt->ring.get(), library, &error);
      if (started == nullptr) {
        off = true;
        Warn("CUPTI unavailable (%s); GPU compute time per collective is not recorded",
             error.c_str());
        return;
      }
      owner = getpid();
      probe = started.release();  // CUPTI's callbacks may use it until the process ends
      std::atexit(FinalPassAtExit);
      return;
    }
    if (getpid() != owner) {
      off = true;
      return;
    }
    probe->Poll();
  } catch (...) {
    off = true;
    Warn("CUPTI probe failed; GPU compute time per collective is no longer recorded");
  }
}

}  // namespace ncclscope::plugin
