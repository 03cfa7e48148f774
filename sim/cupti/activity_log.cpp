#include "sim/cupti/activity_log.h"

#include <cstring>

namespace ncclsim::cupti {
namespace {

size_t Aligned(size_t n) {
  return (n + 7) & ~size_t{7};
}

}  // namespace

size_t RecordBytes(CUpti_ActivityKind kind) {
  switch (kind) {
    case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL:
      return Aligned(sizeof(CUpti_ActivityKernel10));
    case CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION:
      return Aligned(sizeof(CUpti_ActivityExternalCorrelation));
    default:
      return 0;
  }
}

void ActivityLog::SetCallbacks(CUpti_BuffersCallbackRequestFunc requested,
                               CUpti_BuffersCallbackCompleteFunc completed) {
  std::lock_guard<std::mutex> lock(mu_);
  requested_ = requested;
  completed_ = completed;
}

void ActivityLog::Append(const void* record, size_t bytes) {
  uint8_t* full = nullptr;
  size_t full_size = 0, full_used = 0;
  CUpti_BuffersCallbackCompleteFunc completed = nullptr;
  {
    std::lock_guard<std::mutex> lock(mu_);
    const size_t need = Aligned(bytes);
    if (buffer_ != nullptr && used_ + need > size_) {
      // Full: handed back like CUPTI does, and a new one asked for.
      full = buffer_;
      full_size = size_;
      full_used = used_;
      completed = completed_;
      buffer_ = nullptr;
    }
    if (buffer_ == nullptr && requested_ != nullptr) {
      size_t max_records = 0;
      requested_(&buffer_, &size_, &max_records);
      used_ = 0;
      if (buffer_ == nullptr) size_ = 0;
    }
    if (buffer_ == nullptr || used_ + need > size_) {
      ++dropped_;
    } else {
      std::memcpy(buffer_ + used_, record, bytes);
      std::memset(buffer_ + used_ + bytes, 0, need - bytes);
      used_ += need;
    }
  }
  if (full != nullptr && completed != nullptr) completed(nullptr, 0, full, full_size, full_used);
}

void ActivityLog::Flush() {
  uint8_t* buffer = nullptr;
  size_t size = 0, used = 0;
  CUpti_BuffersCallbackCompleteFunc completed = nullptr;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (buffer_ == nullptr || used_ == 0 || completed_ == nullptr) return;
    buffer = buffer_;
    size = size_;
    used = used_;
    completed = completed_;
    buffer_ = nullptr;
    used_ = 0;
  }
  completed(nullptr, 0, buffer, size, used);
}

size_t ActivityLog::TakeDropped() {
  std::lock_guard<std::mutex> lock(mu_);
  const size_t n = dropped_;
  dropped_ = 0;
  return n;
}

}  // namespace ncclsim::cupti
