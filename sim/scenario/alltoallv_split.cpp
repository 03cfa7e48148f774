#include "sim/scenario/alltoallv_split.h"

#include <cstdint>

namespace ncclscope::sim {

size_t alltoallvCount(size_t count, bool equal, const PatternKey& key, int src, int dst) {
  if (equal) return count;
  // Different weights of src and dst (mod 4) make most pairs' two directions differ in size, so
  // a send issued with the receive's count or offset shows. Unsigned wrap-around keeps the sum's
  // residue mod 4 (2^64 is a multiple of 4).
  const uint64_t mix = key.seed + 7 * static_cast<uint64_t>(src) + 2 * static_cast<uint64_t>(dst) +
                       static_cast<uint64_t>(key.step);
  return count * static_cast<size_t>(mix % 4);
}

size_t alltoallvSendOffset(size_t count, bool equal, const PatternKey& key, int src, int dst) {
  size_t offset = 0;
  for (int d = 0; d < dst; ++d) offset += alltoallvCount(count, equal, key, src, d);
  return offset;
}

AlltoallvSplit alltoallvSplit(size_t count, bool equal, const PatternKey& key, int me, int n) {
  AlltoallvSplit s;
  for (int peer = 0; peer < n; ++peer) {
    const size_t out = alltoallvCount(count, equal, key, me, peer);
    const size_t in = alltoallvCount(count, equal, key, peer, me);
    s.send_offsets.push_back(s.send_total);
    s.send_counts.push_back(out);
    s.recv_offsets.push_back(s.recv_total);
    s.recv_counts.push_back(in);
    s.send_total += out;
    s.recv_total += in;
  }
  return s;
}

}  // namespace ncclscope::sim
