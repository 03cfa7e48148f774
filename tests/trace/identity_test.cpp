#include "trace/identity.h"

#include <gtest/gtest.h>

#include <set>

namespace ncclscope::trace {
namespace {

TEST(Identity, SameUniqueIdGivesSameIdOnEveryRank) {
  char a[128] = {1, 2, 3};
  char b[128] = {1, 2, 3};
  EXPECT_EQ(CommIdFromUniqueId(a, sizeof a), CommIdFromUniqueId(b, sizeof b));
  b[127] = 1;  // differs only in the last byte
  EXPECT_NE(CommIdFromUniqueId(a, sizeof a), CommIdFromUniqueId(b, sizeof b));
}

TEST(Identity, SplitsOfOneParentAreDistinctByIndexAndColor) {
  std::set<uint64_t> ids;
  for (uint32_t index = 1; index <= 8; ++index) {
    for (int color = 0; color < 8; ++color) ids.insert(CommIdFromSplit(42, index, color));
    ids.insert(CommIdFromShrink(42, index));
  }
  EXPECT_EQ(ids.size(), 8u * 8u + 8u);
  EXPECT_NE(CommIdFromSplit(42, 1, 0), CommIdFromSplit(43, 1, 0));
}

TEST(Identity, NeverZero) {
  char zeros[128] = {};
  EXPECT_NE(CommIdFromUniqueId(zeros, sizeof zeros), 0u);
  EXPECT_NE(CommIdFromSplit(0, 0, 0), 0u);
}

}  // namespace
}  // namespace ncclscope::trace
