// Arrival lateness as the exporter computes it between scrapes: completions arrive file by file, in
// any order of sequence numbers and across several scrapes, and the answer depends only on which
// collectives are complete, never on the order they were reported in.
#include "exporters/measures/arrival_lateness.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <vector>

namespace ncclscope::exporters {
namespace {

constexpr uint64_t kComm = 0x42;
constexpr uint32_t kMembers = 4;

struct Report {
  uint64_t seq;
  uint32_t member;
  double wait_s;
};

// Member 3 arrives `late_s` after the others (waits that much less), plus `step_s` times the
// sequence number, so that which collectives count shows in the median; every collective takes
// 10 ms.
std::vector<Report> Collectives(uint64_t first_seq, uint64_t n, double late_s, double step_s = 0) {
  std::vector<Report> out;
  for (uint64_t seq = first_seq; seq < first_seq + n; ++seq) {
    const double late = late_s + step_s * static_cast<double>(seq);
    for (uint32_t m = 0; m < kMembers; ++m) out.push_back({seq, m, m == 3 ? 0.004 - late : 0.004});
  }
  return out;
}

ArrivalLateness WithMembers() {
  ArrivalLateness l;
  l.SetMembers(kComm, {3, 1, 0, 2});
  return l;
}

void Feed(ArrivalLateness& l, const std::vector<Report>& reports) {
  for (const Report& r : reports) l.Completed(kComm, r.seq, r.member, r.wait_s, 0.010);
}

TEST(ArrivalLateness, TheLateMemberIsLateByWhatTheOthersWaitedMore) {
  ArrivalLateness l = WithMembers();
  Feed(l, Collectives(1, 10, 0.002));
  l.Settle();
  EXPECT_DOUBLE_EQ(l.Of(kComm, 3).seconds, 0.004 - (0.004 - 0.002));
  EXPECT_DOUBLE_EQ(l.Of(kComm, 3).score, (0.004 - (0.004 - 0.002)) / 0.010);
  EXPECT_EQ(l.Of(kComm, 0).seconds, 0);
  EXPECT_EQ(l.Of(kComm, 7).score, 0);  // not a member
  EXPECT_EQ(l.Of(0x43, 3).score, 0);   // not a communicator
}

TEST(ArrivalLateness, TheOrderOfReportsDoesNotMatter) {
  // The exporter reads file after file, each in sequence order; a file that was unreadable for a
  // while, or a restarted process, reports out of order. Every order must give the same numbers,
  // to the last bit: the same collectives complete, the same newest ones count.
  const std::vector<Report> reports = Collectives(1, 300, 0.001, 0.00001);
  ArrivalLateness reference = WithMembers();
  std::vector<Report> by_member = reports;
  std::stable_sort(by_member.begin(), by_member.end(),
                   [](const Report& a, const Report& b) { return a.member < b.member; });
  Feed(reference, by_member);
  reference.Settle();
  ASSERT_GT(reference.Of(kComm, 3).seconds, 0.001);

  std::mt19937 rng(1);
  for (int trial = 0; trial < 20; ++trial) {
    std::vector<Report> shuffled = reports;
    if (trial == 0) std::reverse(shuffled.begin(), shuffled.end());
    if (trial > 0) std::shuffle(shuffled.begin(), shuffled.end(), rng);
    ArrivalLateness l = WithMembers();
    Feed(l, shuffled);
    l.Settle();
    for (uint32_t m = 0; m < kMembers; ++m) {
      EXPECT_EQ(l.Of(kComm, m).seconds, reference.Of(kComm, m).seconds) << trial << " " << m;
      EXPECT_EQ(l.Of(kComm, m).score, reference.Of(kComm, m).score) << trial << " " << m;
    }
  }
}

TEST(ArrivalLateness, OnlyTheNewestCompleteCollectivesCount) {
  ArrivalLateness l = WithMembers();
  Feed(l, Collectives(1, 100, 0.001));
  Feed(l, Collectives(101, kLatenessWindow, 0.002));
  l.Settle();
  EXPECT_DOUBLE_EQ(l.Of(kComm, 3).seconds, 0.004 - (0.004 - 0.002));
}

TEST(ArrivalLateness, ACollectiveCountsOnceEveryMemberReportedIt) {
  ArrivalLateness l = WithMembers();
  std::vector<Report> reports = Collectives(1, 5, 0.002);
  std::vector<Report> without_member_2;
  std::vector<Report> member_2;
  for (const Report& r : reports) (r.member == 2 ? member_2 : without_member_2).push_back(r);
  Feed(l, without_member_2);
  l.Settle();
  EXPECT_EQ(l.Of(kComm, 3).seconds, 0);  // nothing complete yet
  Feed(l, member_2);
  l.Settle();
  EXPECT_DOUBLE_EQ(l.Of(kComm, 3).seconds, 0.004 - (0.004 - 0.002));
  // A member that is gone no longer holds collectives back: 10 more without member 2, member 3
  // 1 ms late in them, make that the median of the 15.
  l.ForgetMember(2);
  std::vector<Report> later;
  for (const Report& r : Collectives(6, 10, 0.001)) {
    if (r.member != 2) later.push_back(r);
  }
  Feed(l, later);
  l.Settle();
  EXPECT_DOUBLE_EQ(l.Of(kComm, 3).seconds, 0.004 - (0.004 - 0.001));
}

}  // namespace
}  // namespace ncclscope::exporters
