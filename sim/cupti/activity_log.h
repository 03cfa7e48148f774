// The emulated CUPTI's activity log: records packed back to back (each 8-byte aligned) into the
// client's buffers, handed back full or at a flush, the way the probe reads CUPTI's.
#pragma once

#include <cupti_activity.h>

#include <cstddef>
#include <cstdint>
#include <mutex>

namespace ncclsim::cupti {

class ActivityLog {
 public:
  // Thread-safe. The callbacks are the client's (cuptiActivityRegisterCallbacks).
  void SetCallbacks(CUpti_BuffersCallbackRequestFunc requested,
                    CUpti_BuffersCallbackCompleteFunc completed);
  // Appends one record of `bytes` bytes (a CUpti_Activity* struct). A record that finds no
  // buffer (the client gave none) is dropped and counted. Thread-safe.
  void Append(const void* record, size_t bytes);
  // Hands the current buffer to the client when it holds records. Thread-safe; calls the client's
  // callback on the calling thread, outside the lock.
  void Flush();
  // Records dropped so far, minus those already reported (cuptiActivityGetNumDroppedRecords
  // reports each drop once). Thread-safe.
  size_t TakeDropped();

 private:
  std::mutex mu_;
  CUpti_BuffersCallbackRequestFunc requested_ = nullptr;
  CUpti_BuffersCallbackCompleteFunc completed_ = nullptr;
  uint8_t* buffer_ = nullptr;
  size_t size_ = 0;
  size_t used_ = 0;
  size_t dropped_ = 0;
};

// The size of a record of `kind` as the emulator writes it, 0 for kinds it never writes. Pure.
size_t RecordBytes(CUpti_ActivityKind kind);

}  // namespace ncclsim::cupti
