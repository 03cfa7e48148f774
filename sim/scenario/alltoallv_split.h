// The parts of an alltoallv op: how many elements each rank sends each peer, and where each part
// lies in the send and receive buffers, as PyTorch's all_to_all_single with uneven splits lays
// them out (c10d computeLengthsAndOffsets: offsets are prefix sums of the lengths, in elements).
#pragma once

#include <cstddef>
#include <vector>

#include "sim/scenario/data_pattern.h"

namespace ncclscope::sim {

// Elements rank `src` sends rank `dst` (ranks in the communicator; `step` of the key is the global
// step). The same on every rank, so a receiver knows what to expect: `count` for an equal split
// (`equal`), else count x ((seed + 7 src + 2 dst + step) % 4): some pairs exchange nothing, the
// others differ in size, and the two directions of a pair differ unless src - dst is a multiple
// of 4. Pure.
size_t alltoallvCount(size_t count, bool equal, const PatternKey& key, int src, int dst);

// One rank's view, indexed by peer: lengths and element offsets of its send and receive parts.
struct AlltoallvSplit {
  std::vector<size_t> send_counts;
  std::vector<size_t> send_offsets;
  std::vector<size_t> recv_counts;
  std::vector<size_t> recv_offsets;
  size_t send_total = 0;
  size_t recv_total = 0;
};

// The split of rank `me` in a communicator of `n` ranks. Pure.
AlltoallvSplit alltoallvSplit(size_t count, bool equal, const PatternKey& key, int me, int n);

// Where rank `src`'s part for `dst` starts in src's send buffer (elements). Pure.
size_t alltoallvSendOffset(size_t count, bool equal, const PatternKey& key, int src, int dst);

}  // namespace ncclscope::sim
