#include "sim/emulator/comm_layout.h"

namespace ncclsim {

namespace {

constexpr size_t kRingBudgetBytes = size_t(32) << 20;  // virtual; tmpfs backs touched pages only
constexpr size_t kMinChunk = size_t(4) << 10;
constexpr size_t kMaxChunk = size_t(256) << 10;

size_t roundUp(size_t v, size_t a) {
  return (v + a - 1) / a * a;
}

}  // namespace

SegmentLayout SegmentLayout::forRanks(int nranks) {
  SegmentLayout l;
  l.nranks = nranks;
  size_t rings = size_t(nranks) * size_t(nranks);
  size_t per_slot = kRingBudgetBytes / (rings * kRingSlots);
  size_t chunk = kMaxChunk;
  while (chunk > kMinChunk && chunk > per_slot) chunk /= 2;
  l.chunk_bytes = chunk;
  l.slot_bytes = sizeof(ChunkHeader) + chunk;
  l.ring_bytes = sizeof(RingControl) + kRingSlots * l.slot_bytes;
  l.board_offset = roundUp(sizeof(SegmentHeader), 4096);
  l.rings_offset = roundUp(l.board_offset + size_t(nranks) * sizeof(BoardEntry), 4096);
  l.total_bytes = l.rings_offset + rings * l.ring_bytes;
  return l;
}

}  // namespace ncclsim
