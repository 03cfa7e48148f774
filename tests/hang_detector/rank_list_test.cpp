// How verdict text names ranks: a person reads the headline in seconds, so a 4096-rank job's
// victims must read as ranges, and short lists must stay as they are.
#include <gtest/gtest.h>

#include <vector>

#include "hang_detector/verdicts/rank_list.h"
#include "hang_detector/verdicts/verdict_text.h"

namespace ncclscope::hang_detector {
namespace {

std::vector<int> Every(int first, int last, int step, int skip = -1) {
  std::vector<int> out;
  for (int r = first; r <= last; r += step) {
    if (r != skip) out.push_back(r);
  }
  return out;
}

TEST(RankList, ShortListsStayAsTheyAre) {
  EXPECT_EQ(RankList({5}), "rank 5");
  EXPECT_EQ(RankList({2, 3}), "ranks 2,3");
  EXPECT_EQ(RankList({0, 2, 4}), "ranks 0,2,4");
  EXPECT_EQ(RankList({1, 5, 9, 20}), "ranks 1,5,9,20");
}

TEST(RankList, NeighboursBecomeARange) {
  EXPECT_EQ(RankList({0, 1, 2}), "ranks 0-2");
  EXPECT_EQ(RankList(Every(0, 7, 1)), "ranks 0-7");
  EXPECT_EQ(RankList({0, 2, 3, 4, 5, 6, 7}), "ranks 0,2-7");
  EXPECT_EQ(RankList({0, 1, 2, 3, 5, 6, 7}), "ranks 0-3,5-7");
  EXPECT_EQ(RankList({0, 1, 2, 3, 5, 6, 7, 8}), "ranks 0-3,5-8 (8 ranks)");
}

TEST(RankList, AStrideReadsAsSlurmArrayRange) {
  // The dp group of rank 2051 in a tp 8 x pp 4 job of 4096 ranks, without rank 2051 itself.
  EXPECT_EQ(RankList(Every(3, 4067, 32, 2051)), "ranks 3-2019:32,2083-4067:32 (127 ranks)");
  EXPECT_EQ(RankList({1, 3, 5, 7}), "ranks 1-7:2");
  EXPECT_EQ(RankList({1, 3, 5}), "ranks 1,3,5");  // a stride needs 4 ranks to be worth it
}

TEST(RankList, FilesWithoutARankAreNamedAndNeverMergedIntoARange) {
  EXPECT_EQ(RankList({-1}), "rank file0");
  EXPECT_EQ(RankList({-3, -2, -1}), "ranks file2,file1,file0");
  EXPECT_EQ(RankList({0, 1, 2, -1}), "ranks 0-2,file0");
}

TEST(RenderText, ListsThatGrowWithTheJobStayOneShortLine) {
  // Two files of a job that claims a million ranks, waiting on a communicator of all of them.
  Analysis a;
  a.verdicts.emplace_back();
  a.input.files = 2;
  a.input.world_size = 1'000'000;
  a.input.missing_ranks = Every(2, 999'999, 1);
  WaitingOn w;
  w.comm_name = "world";
  w.op = "allreduce";
  w.seq = 3;
  w.issued = {0, 1};
  w.not_issued = Every(2, 999'999, 1);
  a.waiting.push_back(w);
  const std::string text = RenderText(a, true);
  EXPECT_LT(text.size(), 400u) << text;
  EXPECT_NE(text.find("not issued 2-999999"), std::string::npos) << text;
  EXPECT_NE(text.find("no file for ranks 2-999999"), std::string::npos) << text;
}

}  // namespace
}  // namespace ncclscope::hang_detector
