#include "collectives/twins/allreduce_twin.h"

#include <cstring>

#include "collectives/twins/narrow_float.h"
#include "collectives/twins/twin_steps.h"

namespace ncclscope::collectives {
namespace {

constexpr size_t kMaxPerPack = kPackBytes / 2;  // 8 elements of 16 bits

float LoadElement(Dtype d, const unsigned char* pack, size_t e) {
  if (d == Dtype::kFp32) {
    float f;
    std::memcpy(&f, pack + e * 4, 4);
    return f;
  }
  uint16_t h;
  std::memcpy(&h, pack + e * 2, 2);
  return d == Dtype::kBf16 ? Bf16ToFloat(h) : HalfToFloat(h);
}

void StoreElement(Dtype d, unsigned char* pack, size_t e, float v) {
  if (d == Dtype::kFp32) {
    std::memcpy(pack + e * 4, &v, 4);
    return;
  }
  const uint16_t h = d == Dtype::kBf16 ? FloatToBf16(v) : FloatToHalf(v);
  std::memcpy(pack + e * 2, &h, 2);
}

// One pack of the sum over ranks 0..n-1, in that order, accumulated in fp32 from rank 0's value:
// every rank that reduces this pack gets the same bits.
void ReducePack(Dtype d, const unsigned char* const* sources, int n, size_t pack,
                unsigned char* out) {
  const size_t per_pack = kPackBytes / DtypeBytes(d);
  float acc[kMaxPerPack];
  const size_t at = pack * kPackBytes;
  for (size_t e = 0; e < per_pack; ++e) acc[e] = LoadElement(d, sources[0] + at, e);
  for (int q = 1; q < n; ++q) {
    for (size_t e = 0; e < per_pack; ++e) acc[e] += LoadElement(d, sources[q] + at, e);
  }
  for (size_t e = 0; e < per_pack; ++e) StoreElement(d, out + at, e, acc[e]);
}

// Both stages of two-shot map a slice's packs alike (twin_steps.h, ForEachPackOfBlock): a pack
// one block reduced is gathered by the same block (the same thread) of every rank, which is what
// the middle barrier makes visible.
template <typename F>
void ForEachPack(size_t begin, size_t len, uint32_t b, uint32_t blocks, uint32_t threads, F f) {
  ForEachPackOfBlock(begin, len, b, blocks, threads, f);
}

// This rank's side of one barrier of block b (twin_steps.h).
bool Cross(const TwinCall& c, const PeerMemory& m, uint32_t b, Barrier which, Stall* stall) {
  return CrossBarrier({c.rank, c.nranks, c.epoch, c.deadline_ns, m.signal}, b, which, stall);
}

struct Sources {
  const unsigned char* of[kMaxRanks];
};

Sources InputsOf(const TwinCall& c, const PeerMemory& m) {
  Sources s{};
  for (int q = 0; q < c.nranks; ++q) {
    s.of[q] = c.plan->copy_in ? m.staging[q] : static_cast<const unsigned char*>(c.peer_input[q]);
  }
  return s;
}

void CopyIn(const TwinCall& c, const PeerMemory& m, size_t pack) {
  std::memcpy(m.staging[c.rank] + pack * kPackBytes,
              static_cast<const unsigned char*>(c.input) + pack * kPackBytes, kPackBytes);
}

bool OneShotBlock(const TwinCall& c, const PeerMemory& m, uint32_t b, Stall* stall) {
  const AllReducePlan& p = *c.plan;
  if (p.copy_in) {
    ForEachPack(0, p.packs, b, p.blocks, p.threads, [&](size_t k) { CopyIn(c, m, k); });
  }
  if (!Cross(c, m, b, Barrier::kStart, stall)) return false;
  const Sources in = InputsOf(c, m);
  auto* out = static_cast<unsigned char*>(c.output);
  ForEachPack(0, p.packs, b, p.blocks, p.threads,
              [&](size_t k) { ReducePack(p.dtype, in.of, c.nranks, k, out); });
  // No rank leaves while another may still read its input (or staging): the next call rewrites it.
  return Cross(c, m, b, Barrier::kEnd, stall);
}

bool TwoShotBlock(const TwinCall& c, const PeerMemory& m, uint32_t b, Stall* stall) {
  const AllReducePlan& p = *c.plan;
  auto slice = [&](int s, auto f) {
    const size_t begin = SliceBegin(p.packs, c.nranks, s);
    ForEachPack(begin, SliceBegin(p.packs, c.nranks, s + 1) - begin, b, p.blocks, p.threads, f);
  };
  if (p.copy_in) {
    for (int s = 0; s < c.nranks; ++s) slice(s, [&](size_t k) { CopyIn(c, m, k); });
  }
  if (!Cross(c, m, b, Barrier::kStart, stall)) return false;
  const Sources in = InputsOf(c, m);
  unsigned char* mine = m.scratch[c.rank];
  slice(c.rank, [&](size_t k) { ReducePack(p.dtype, in.of, c.nranks, k, mine); });
  // Release: this rank's reduced slice is visible to a peer that sees the epoch.
  if (!Cross(c, m, b, Barrier::kMiddle, stall)) return false;
  auto* out = static_cast<unsigned char*>(c.output);
  for (int s = 0; s < c.nranks; ++s) {
    const unsigned char* reduced = m.scratch[s];
    slice(s, [&](size_t k) {
      std::memcpy(out + k * kPackBytes, reduced + k * kPackBytes, kPackBytes);
    });
  }
  return Cross(c, m, b, Barrier::kEnd, stall);
}

}  // namespace

bool RunAllReduceTwin(const TwinCall& call, const PeerMemory& mem, Stall* stall) noexcept {
  const AllReducePlan& p = *call.plan;
  if (p.algorithm == Algorithm::kNccl) return true;  // nothing of ours to run
  // Blocks run one after another here; on the GPU they run at once. Every rank walks them in the
  // same order, so block b's barriers meet.
  for (uint32_t b = 0; b < p.blocks; ++b) {
    const bool ok = p.algorithm == Algorithm::kOneShot ? OneShotBlock(call, mem, b, stall)
                                                       : TwoShotBlock(call, mem, b, stall);
    if (!ok) return false;
  }
  return true;
}

}  // namespace ncclscope::collectives
