// The commit word of one ring slot through a mapping of the test's own, as another writer thread
// sees it: lets a test stage what a writer preempted in the middle of a record leaves behind.
#pragma once

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>

#include "trace/ring_layout.h"
#include "trace/ring_writer.h"

namespace ncclscope::testing {

class SlotCommit {
 public:
  SlotCommit(const trace::RingWriter& w, uint64_t slot) {
    const int fd = open(w.path().c_str(), O_RDWR | O_CLOEXEC);
    EXPECT_GE(fd, 0);
    bytes_ = w.header().file_bytes;
    base_ = mmap(nullptr, bytes_, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    close(fd);
    EXPECT_NE(base_, MAP_FAILED);
    const auto& h = *static_cast<const trace::FileHeader*>(base_);
    slot_ =
        reinterpret_cast<trace::RecordSlot*>(static_cast<char*>(base_) + h.records_offset) + slot;
  }
  ~SlotCommit() { munmap(base_, bytes_); }
  SlotCommit(const SlotCommit&) = delete;
  SlotCommit& operator=(const SlotCommit&) = delete;

  std::atomic<uint64_t>& commit() { return slot_->commit; }
  // The writer of `index` owns the slot and has not finished its record.
  void OwnedBy(uint64_t index) { commit().store(trace::kSlotWriting | (index + 1)); }
  // The writer of `index` finished its record.
  void CommittedBy(uint64_t index) { commit().store(index + 1); }

 private:
  void* base_ = nullptr;
  size_t bytes_ = 0;
  trace::RecordSlot* slot_ = nullptr;
};

}  // namespace ncclscope::testing
