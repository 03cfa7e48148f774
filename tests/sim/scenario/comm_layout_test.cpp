#include <gtest/gtest.h>

#include "sim/scenario/comm_layout.h"
#include "tests/sim/scenario/test_scenario_text.h"

namespace ncclscope::sim {
namespace {

using Groups = std::vector<std::vector<int>>;

TEST(CommLayout, BlockStrideAndSplitOfSplit) {
  const Scenario s = testing::parse(R"({"communicators": [
      {"name": "tp", "split": {"by": "block", "size": 2}},
      {"name": "dp", "split": {"by": "stride", "stride": 2}},
      {"name": "stage", "split": {"by": "block", "size": 4}},
      {"name": "sdp", "parent": "stage", "split": {"by": "stride", "stride": 2}},
      {"name": "rev", "split": {"by": "block", "size": 4}, "key": "reverse"}],
    "steps": [{"ops": []}]})");
  const JobLayout job(s, 8);
  EXPECT_EQ(job.comm("world").groups, (Groups{{0, 1, 2, 3, 4, 5, 6, 7}}));
  EXPECT_EQ(job.comm("tp").groups, (Groups{{0, 1}, {2, 3}, {4, 5}, {6, 7}}));
  EXPECT_EQ(job.comm("dp").groups, (Groups{{0, 2, 4, 6}, {1, 3, 5, 7}}));
  // The same color in different parent groups makes different communicators.
  EXPECT_EQ(job.comm("sdp").groups, (Groups{{0, 2}, {1, 3}, {4, 6}, {5, 7}}));
  EXPECT_EQ(job.comm("rev").groups, (Groups{{3, 2, 1, 0}, {7, 6, 5, 4}}));
  EXPECT_EQ(job.comm("rev").rank[0], 3);
  EXPECT_EQ(job.comm("dp").rank[5], 2);
  EXPECT_EQ(job.comm("dp").color[5], 1);
  EXPECT_EQ(job.comm("sdp").color[5], 1);  // parent rank 1 in stage {4..7}
  EXPECT_EQ(job.comm("tp").sizeFor(7), 2);
}

TEST(CommLayout, UnevenGroups) {
  const Scenario s = testing::parse(R"({"communicators": [
      {"name": "tp", "split": {"by": "block", "size": 2}}], "steps": [{"ops": []}]})");
  const JobLayout job(s, 5);
  EXPECT_EQ(job.comm("tp").groups, (Groups{{0, 1}, {2, 3}, {4}}));
  EXPECT_EQ(job.comm("tp").sizeFor(4), 1);
}

TEST(CommLayout, ResolveRank) {
  EXPECT_EQ(resolveRank(-1, 8), 7);
  EXPECT_EQ(resolveRank(3, 8), 3);
  EXPECT_EQ(resolveRank(8, 8), -1);
  EXPECT_EQ(resolveRank(-9, 8), -1);
}

}  // namespace
}  // namespace ncclscope::sim
