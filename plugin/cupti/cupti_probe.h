// The CUPTI probe (NCCLSCOPE_CUPTI=1): CUPTI's kernel activity gives, for every NCCL kernel, the
// GPU time compute kernels took on its device since the NCCL kernel before it; one device_compute
// record per NCCL kernel carries it with the collective that launched it (trace/record.h). All of
// it runs on the background thread and CUPTI's own threads; the hot path only pushes and pops the
// call's correlation id (cupti_correlate.h).
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "plugin/cupti/cupti_api.h"
#include "plugin/cupti/cupti_decode.h"
#include "plugin/cupti/cupti_timeline.h"
#include "trace/ring_writer.h"

namespace ncclscope::plugin {

class CuptiProbe {
 public:
  // ring outlives the probe. api is a loaded table (LoadCupti, or a fake). Construction only.
  CuptiProbe(trace::RingWriter* ring, const CuptiApi& api);

  // Registers the buffer callbacks and enables kernel, external-correlation and driver activity
  // (CUPTI emits external correlations only for API records it creates). On failure disables what
  // it enabled and returns false with *error set. At most one probe per process is enabled (CUPTI
  // has one activity client). Call once, from the background thread.
  bool Enable(std::string* error);

  // One pass: asks CUPTI for completed buffers (all buffers when final: at exit), reads the ring's
  // new records (to know which call each correlation key names), pairs NCCL kernels with their
  // calls and appends device_compute and device_activity_loss records. Thread-safe (the
  // background thread, and the exit handler's final pass).
  void Poll(bool final = false);

  // CUPTI's buffer-completed callback, forwarded: decodes the buffer and queues what it holds.
  // Thread-safe (CUPTI's threads and the thread flushing).
  void OnBufferCompleted(uint8_t* buffer, size_t valid_bytes, CUcontext ctx, uint32_t stream_id);

  // For tests: records the probe could not attribute so far, and records CUPTI dropped.
  uint64_t unattributed() const { return unattributed_total_; }
  uint64_t dropped() const { return dropped_total_; }

 private:
  struct Launch {
    uint64_t comm_id;
    uint64_t seq;
    uint64_t group_id;
    uint32_t op;
  };
  struct Waiting {
    NcclKernelSpan span;
    int polls;  // passes it has waited for its call's record or correlation
  };
  void IndexRing();
  bool Resolve(const NcclKernelSpan& span, Launch* launch) const;
  void AppendCompute(const NcclKernelSpan& span, const Launch& launch);
  void AppendLoss(uint64_t count, uint64_t why);

  trace::RingWriter* ring_;
  CuptiApi api_;

  std::mutex mu_;  // guards the queue below, filled by CUPTI's threads
  DecodedActivity queued_;
  uint64_t queued_dropped_ = 0;

  std::mutex poll_mu_;  // one pass at a time; guards everything below
  DeviceTimeline timeline_;
  uint64_t ring_next_ = 0;
  std::unordered_map<uint64_t, Launch> launches_;        // correlation key -> the call's record
  std::deque<uint64_t> launch_order_;                    // for eviction, oldest first
  std::unordered_map<uint32_t, uint64_t> correlations_;  // CUPTI correlation id -> key
  std::deque<uint32_t> correlation_order_;
  std::vector<Waiting> waiting_;
  uint64_t unattributed_total_ = 0;
  uint64_t dropped_total_ = 0;
};

struct Runtime;

// The library NCCLSCOPE_CUPTI names: "" for "" and "0" (off), libcupti.so.13 for "1", else the
// value itself (a path). Pure.
std::string CuptiLibraryFor(const std::string& setting);

// Loads library and enables a probe writing into ring. Returns null with *error set when CUPTI
// cannot be used (library or symbol missing; activity refused, as without a GPU or driver).
// Background thread (or a test's), once per process.
std::unique_ptr<CuptiProbe> StartCuptiProbe(trace::RingWriter* ring, const std::string& library,
                                            std::string* error);

// Called by the background thread every heartbeat when NCCLSCOPE_CUPTI=1: the first call loads
// libcupti and enables the probe (one warning and nothing more when it cannot: no GPU, no driver,
// no libcupti.so.13), later ones poll it. noexcept; never throws into the thread.
void PollCupti(Runtime* rt) noexcept;

}  // namespace ncclscope::plugin
