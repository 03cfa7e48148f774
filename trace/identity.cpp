#include "trace/identity.h"

namespace ncclscope::trace {
namespace {

constexpr uint64_t kFnvOffset = 1469598103934665603ULL;
constexpr uint64_t kFnvPrime = 1099511628211ULL;

uint64_t Fnv1a(uint64_t h, const void* data, size_t size) {
  const auto* p = static_cast<const unsigned char*>(data);
  for (size_t i = 0; i < size; ++i) {
    h ^= p[i];
    h *= kFnvPrime;
  }
  return h;
}

// FNV alone mixes the last bytes poorly; a final avalanche spreads them over all 64 bits.
uint64_t Finish(uint64_t h) {
  h ^= h >> 33;
  h *= 0xff51afd7ed558ccdULL;
  h ^= h >> 33;
  h *= 0xc4ceb9fe1a85ec53ULL;
  h ^= h >> 33;
  return h == 0 ? 1 : h;
}

uint64_t Derive(uint64_t parent, char kind, uint32_t index, int64_t extra) {
  uint64_t h = Fnv1a(kFnvOffset, &parent, sizeof parent);
  h = Fnv1a(h, &kind, 1);
  h = Fnv1a(h, &index, sizeof index);
  h = Fnv1a(h, &extra, sizeof extra);
  return Finish(h);
}

}  // namespace

uint64_t CommIdFromUniqueId(const void* unique_id_bytes, size_t size) {
  return Finish(Fnv1a(kFnvOffset, unique_id_bytes, size));
}

uint64_t CommIdFromSplit(uint64_t parent_id, uint32_t split_index, int color) {
  return Derive(parent_id, 's', split_index, color);
}

uint64_t CommIdFromShrink(uint64_t parent_id, uint32_t split_index) {
  return Derive(parent_id, 'k', split_index, 0);
}

uint64_t CommIdFromInitAll(uint64_t process_nonce, uint32_t call_index) {
  return Derive(process_nonce, 'a', call_index, 0);
}

}  // namespace ncclscope::trace
