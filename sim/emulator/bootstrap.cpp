#include "sim/emulator/bootstrap.h"

#include <cstring>

#include "sim/emulator/backoff_wait.h"

namespace ncclsim {

void bootstrapPublish(const SegmentView& seg, int rank, uint64_t round, const void* blob) {
  BoardEntry* e = seg.board(rank);
  std::memcpy(e->blob[round % 2], blob, kBlobBytes);
  e->round.store(round, std::memory_order_release);
}

bool bootstrapPoll(const SegmentView& seg, int nranks, uint64_t round, void* out) {
  for (int r = 0; r < nranks; ++r) {
    if (seg.board(r)->round.load(std::memory_order_acquire) < round) return false;
  }
  if (out != nullptr) {
    for (int r = 0; r < nranks; ++r) {
      std::memcpy(static_cast<char*>(out) + size_t(r) * kBlobBytes, seg.board(r)->blob[round % 2],
                  kBlobBytes);
    }
  }
  return true;
}

void bootstrapAllGather(const SegmentView& seg, int rank, int nranks, uint64_t round,
                        const void* blob, void* out) {
  bootstrapPublish(seg, rank, round, blob);
  Backoff backoff;
  while (!bootstrapPoll(seg, nranks, round, out)) backoff.pause();
}

}  // namespace ncclsim
