// The alltoallv op's parts (what each rank sends each peer, where in its buffers) and the check of
// what a rank received, with the exchange done here by copying parts between ranks' buffers as
// the library would.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <set>

#include "sim/scenario/alltoallv_split.h"
#include "sim/scenario/names.h"
#include "sim/scenario/op_data.h"

namespace ncclscope::sim {
namespace {

OpCall alltoallv(size_t count, ncclDataType_t dtype, bool equal = false) {
  OpCall c;
  c.kind = OpKind::kAllToAllV;
  c.count = count;
  c.dtype = dtype;
  c.equal_counts = equal;
  return c;
}

// What NCCL does for the group of sends and receives: each part of a sender's send buffer lands
// in its receiver's part for it. With `swap`, a broken issuer that sends with the receive
// offsets, which the check must catch.
std::vector<OpBuffers> exchange(const OpCall& c, const PatternKey& key, int n, bool swap = false) {
  std::vector<OpBuffers> b;
  for (int r = 0; r < n; ++r) b.push_back(prepareBuffers(c, key, r, n));
  const size_t es = dtypeSize(c.dtype);
  for (int s = 0; s < n; ++s) {
    const AlltoallvSplit& from = b[static_cast<size_t>(s)].split;
    for (int d = 0; d < n; ++d) {
      const AlltoallvSplit& to = b[static_cast<size_t>(d)].split;
      const auto sd = static_cast<size_t>(d);
      const auto ss = static_cast<size_t>(s);
      EXPECT_EQ(from.send_counts[sd], to.recv_counts[ss]) << s << " -> " << d;
      const size_t src_off = swap ? from.recv_offsets[sd] : from.send_offsets[sd];
      // The broken issuer's offsets may run past the send buffer: it copies what lies inside.
      const size_t available = b[ss].send.size() / es - std::min(src_off, b[ss].send.size() / es);
      std::memcpy(&b[sd].recv[to.recv_offsets[ss] * es], b[ss].send.data() + src_off * es,
                  std::min<size_t>(from.send_counts[sd], available) * es);
    }
  }
  return b;
}

TEST(Alltoallv, EveryRanksSendCountIsItsPeersReceiveCount) {
  const PatternKey key{11, 0, 3, 0};
  for (int n : {1, 2, 3, 4, 5, 8}) {
    for (bool equal : {false, true}) {
      const OpCall c = alltoallv(3, ncclFloat32, equal);
      for (int me = 0; me < n; ++me) {
        const AlltoallvSplit s = alltoallvSplit(c.count, equal, key, me, n);
        size_t off = 0;
        for (int peer = 0; peer < n; ++peer) {
          const auto p = static_cast<size_t>(peer);
          EXPECT_EQ(s.send_counts[p], alltoallvCount(c.count, equal, key, me, peer));
          EXPECT_EQ(
              s.recv_counts[p],
              alltoallvSplit(c.count, equal, key, peer, n).send_counts[static_cast<size_t>(me)]);
          EXPECT_EQ(s.recv_offsets[p], off) << "offsets are prefix sums";
          off += s.recv_counts[p];
          if (equal) {
            EXPECT_EQ(s.send_counts[p], 3u);
          }
        }
        EXPECT_EQ(s.recv_total, off);
      }
    }
  }
}

// count x ((seed + 7 src + 2 dst + step) % 4): some parts empty, sizes differ, and a pair's two
// directions differ, so a send issued with the receive's count or offset cannot pass unnoticed.
TEST(Alltoallv, UnevenSplitHasEmptyPartsDifferentSizesAndAsymmetricPairs) {
  const PatternKey key{11, 0, 0, 0};
  const size_t count = 3;
  std::set<size_t> sizes;
  int asymmetric = 0;
  for (int s = 0; s < 4; ++s) {
    for (int d = 0; d < 4; ++d) {
      sizes.insert(alltoallvCount(count, false, key, s, d));
      asymmetric +=
          alltoallvCount(count, false, key, s, d) != alltoallvCount(count, false, key, d, s);
    }
  }
  EXPECT_EQ(sizes, (std::set<size_t>{0, 3, 6, 9}));
  EXPECT_GT(asymmetric, 0);
  EXPECT_EQ(alltoallvCount(count, false, key, 1, 0), 6u);  // (11 + 7 + 0 + 0) % 4 = 2
  EXPECT_EQ(alltoallvCount(count, false, key, 0, 1), 3u);  // (11 + 0 + 2 + 0) % 4 = 1
  EXPECT_EQ(alltoallvCount(count, false, PatternKey{11, 0, 1, 0}, 0, 1), 6u) << "step counts";
}

TEST(Alltoallv, PartsStartWhereNoAlignmentIsPromised) {
  const OpCall c = alltoallv(3, ncclFloat32);
  const OpBuffers b = prepareBuffers(c, PatternKey{11, 0, 0, 0}, 2, 4);
  bool unaligned = false;
  for (size_t off : b.split.recv_offsets) unaligned = unaligned || (off * 4) % 16 != 0;
  EXPECT_TRUE(unaligned);
  EXPECT_EQ(b.recv.size(), b.recv_count * 4 + kGuardBytes);
  EXPECT_EQ(b.send.size(), b.send_count * 4);
}

TEST(Alltoallv, ReceivedPartsCheckOutOnEveryRank) {
  for (ncclDataType_t dtype : {ncclFloat32, ncclBfloat16, ncclInt8, ncclFloat8e4m3}) {
    for (int n : {1, 2, 3, 5, 8}) {
      const OpCall c = alltoallv(5, dtype);
      const PatternKey key{7, 1, 2, 3};
      const std::vector<OpBuffers> b = exchange(c, key, n);
      for (int r = 0; r < n; ++r) {
        EXPECT_EQ(checkResult(c, key, r, n, b[static_cast<size_t>(r)]), std::nullopt)
            << dtypeName(dtype) << " rank " << r << " of " << n;
      }
    }
  }
}

TEST(Alltoallv, AWrongElementNamesItsOffsetAndSourceRank) {
  const OpCall c = alltoallv(3, ncclFloat32);
  const PatternKey key{11, 0, 0, 0};
  std::vector<OpBuffers> b = exchange(c, key, 4);
  // Rank 1 receives 3 elements from rank 0, then 9 from rank 2 (offsets 3..11).
  ASSERT_EQ(b[1].split.recv_offsets[2], 3u);
  ASSERT_EQ(b[1].split.recv_counts[2], 9u);
  b[1].recv[size_t{7} * 4] ^= 0x40;
  const auto wrong = checkResult(c, key, 1, 4, b[1]);
  ASSERT_TRUE(wrong.has_value());
  EXPECT_NE(wrong->find("offset 7 (part from rank 2): got"), std::string::npos) << *wrong;
}

TEST(Alltoallv, SendingFromTheReceiveOffsetsIsCaught) {
  const OpCall c = alltoallv(3, ncclFloat32);
  const PatternKey key{11, 0, 0, 0};
  const std::vector<OpBuffers> b = exchange(c, key, 4, /*swap=*/true);
  int caught = 0;
  for (int r = 0; r < 4; ++r)
    caught += checkResult(c, key, r, 4, b[static_cast<size_t>(r)]) ? 1 : 0;
  EXPECT_GT(caught, 0);
}

TEST(Alltoallv, AWriteBeyondTheLastPartIsCaught) {
  const OpCall c = alltoallv(2, ncclInt32);
  const PatternKey key{11, 0, 0, 0};
  std::vector<OpBuffers> b = exchange(c, key, 3);
  ASSERT_EQ(checkResult(c, key, 0, 3, b[0]), std::nullopt);
  b[0].recv[b[0].recv_count * 4 + 5] = 0;
  const auto wrong = checkResult(c, key, 0, 3, b[0]);
  ASSERT_TRUE(wrong.has_value());
  EXPECT_EQ(*wrong, "byte 5 past the last received part was written (0x00)");
}

TEST(Alltoallv, ARankThatReceivesNothingStillHasItsGuardChecked) {
  const OpCall c = alltoallv(1, ncclFloat32);
  // One rank, seed 3, step 1: its part to itself is 1 x ((3 + 0 + 0 + 1) % 4) = 0 elements.
  const PatternKey key{3, 0, 1, 0};
  OpBuffers b = prepareBuffers(c, key, 0, 1);
  ASSERT_EQ(b.recv_count, 0u);
  EXPECT_EQ(checkResult(c, key, 0, 1, b), std::nullopt);
  b.recv[0] = 0;
  EXPECT_TRUE(checkResult(c, key, 0, 1, b).has_value());
}

}  // namespace
}  // namespace ncclscope::sim
