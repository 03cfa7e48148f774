// Layout of a communicator's shared memory segment: a header, a bootstrap board (one entry per
// rank) and one bounded chunk ring per ordered (sender, receiver) pair. The size is fixed by the
// rank count, so any message size flows through it in chunks.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

namespace ncclsim {

constexpr size_t kBlobBytes = 16;  // payload of one bootstrap round per rank
constexpr uint64_t kRingSlots = 4;

struct alignas(64) SegmentHeader {
  std::atomic<uint32_t> nranks;  // set by the first rank to arrive; others must agree
};

// Round r of the bootstrap all-gather is in blob[r % 2]; a rank can only start round r + 1 after
// reading everyone's round r, so two buffers suffice.
struct alignas(64) BoardEntry {
  std::atomic<uint64_t> round;  // latest round this rank published
  uint8_t blob[2][kBlobBytes];
};

// Describes the chunk in a ring slot. The receiver checks sig against what it expects before it
// touches the data, so ranks that disagree about an operation stall instead of corrupting memory.
struct alignas(64) ChunkHeader {
  uint64_t sig;         // signature of the operation (see op_signature in op_plan.h)
  uint64_t visible_ns;  // modeled arrival time (CLOCK_MONOTONIC)
  uint64_t offset;      // element offset within the destination region
  uint32_t nelems;
  uint32_t phase;  // 0: contribution to a reduction, 1: final data to copy
};

// Single-producer single-consumer indices of one ring; head counts published chunks, tail counts
// consumed ones.
struct alignas(64) RingControl {
  std::atomic<uint64_t> head;
  alignas(64) std::atomic<uint64_t> tail;
};

// Offsets for `nranks`; identical in every rank that agrees on nranks.
struct SegmentLayout {
  int nranks = 0;
  size_t chunk_bytes = 0;
  size_t slot_bytes = 0;
  size_t ring_bytes = 0;
  size_t board_offset = 0;
  size_t rings_offset = 0;
  size_t total_bytes = 0;

  static SegmentLayout forRanks(int nranks);
};

// Typed access to a mapped segment. Cheap to copy; does not own the mapping.
class SegmentView {
 public:
  SegmentView() = default;
  SegmentView(void* base, const SegmentLayout& layout)
      : base_(static_cast<char*>(base)), l_(layout) {}

  SegmentHeader* header() const { return reinterpret_cast<SegmentHeader*>(base_); }
  BoardEntry* board(int rank) const {
    return reinterpret_cast<BoardEntry*>(base_ + l_.board_offset) + rank;
  }
  RingControl* ring(int src, int dst) const {
    return reinterpret_cast<RingControl*>(ringBase(src, dst));
  }
  ChunkHeader* slotHeader(int src, int dst, uint64_t index) const {
    return reinterpret_cast<ChunkHeader*>(slotBase(src, dst, index));
  }
  char* slotData(int src, int dst, uint64_t index) const {
    return slotBase(src, dst, index) + sizeof(ChunkHeader);
  }
  const SegmentLayout& layout() const { return l_; }

 private:
  char* ringBase(int src, int dst) const {
    return base_ + l_.rings_offset +
           (size_t(src) * size_t(l_.nranks) + size_t(dst)) * l_.ring_bytes;
  }
  char* slotBase(int src, int dst, uint64_t index) const {
    return ringBase(src, dst) + sizeof(RingControl) + (index % kRingSlots) * l_.slot_bytes;
  }

  char* base_ = nullptr;
  SegmentLayout l_;
};

}  // namespace ncclsim
