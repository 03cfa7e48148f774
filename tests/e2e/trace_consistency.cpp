#include "tests/e2e/trace_consistency.h"
#include "tests/e2e/op_kinds.h"

#include <gtest/gtest.h>

#include <string>
#include <tuple>
#include <vector>

namespace ncclscope::testing {
namespace {

// The fields every member must agree on at one sequence number. Per-rank fields (buffers, stream,
// times) are left out on purpose.
using CollectiveKey = std::tuple<std::string, uint64_t, std::string, std::string, int>;

// A created reduction ("premulsum5") is numbered by each process; members need not agree on it.
std::string RedopOf(const nlohmann::json& r) {
  const std::string name = r.at("redop");
  return name.rfind("premulsum", 0) == 0 ? "premulsum" : name;
}

CollectiveKey KeyOf(const nlohmann::json& r) {
  return {r.at("op"), r.at("count"), r.at("dtype"), RedopOf(r), r.at("peer")};
}

}  // namespace

void ExpectCollectivesAgree(const std::map<int, RankDump>& dump) {
  // comm id -> rank -> ordered collectives of that rank on that comm
  std::map<std::string, std::map<int, std::vector<nlohmann::json>>> by_comm;
  std::map<std::string, int> comm_size;
  for (const auto& [rank, d] : dump) {
    for (const auto& c : d.comms) {
      auto [it, inserted] = comm_size.emplace(c.at("comm_id"), c.at("comm_nranks").get<int>());
      EXPECT_EQ(it->second, c.at("comm_nranks").get<int>())
          << "ranks disagree on the size of comm " << c.at("comm_id");
      by_comm[c.at("comm_id")][rank];  // a member with no collectives still counts
    }
    for (const auto& r : d.records) {
      if (kCollectives.count(r.at("op")) == 0) continue;
      EXPECT_NE(r.at("comm_id"), "") << "rank " << rank << " collective without a comm id";
      by_comm[r.at("comm_id")][rank].push_back(r);
    }
  }
  for (const auto& [comm, ranks] : by_comm) {
    EXPECT_EQ(static_cast<int>(ranks.size()), comm_size[comm])
        << "comm " << comm << ": " << ranks.size() << " ranks recorded it, its size is "
        << comm_size[comm];
    const auto& [first_rank, reference] = *ranks.begin();
    for (size_t i = 0; i < reference.size(); ++i) {
      EXPECT_EQ(reference[i].at("seq").get<uint64_t>(), i + 1)
          << "comm " << comm << " rank " << first_rank << ": sequence numbers not contiguous";
    }
    for (const auto& [rank, ops] : ranks) {
      ASSERT_EQ(ops.size(), reference.size())
          << "comm " << comm << ": rank " << rank << " recorded " << ops.size()
          << " collectives, rank " << first_rank << " " << reference.size();
      for (size_t i = 0; i < ops.size(); ++i) {
        EXPECT_EQ(ops[i].at("seq"), reference[i].at("seq")) << "comm " << comm << " rank " << rank;
        EXPECT_EQ(KeyOf(ops[i]), KeyOf(reference[i]))
            << "comm " << comm << " seq " << ops[i].at("seq") << ": rank " << rank << " and rank "
            << first_rank << " recorded different collectives: " << ops[i].dump() << " vs "
            << reference[i].dump();
      }
    }
  }
}

void ExpectSendRecvMatch(const std::map<int, RankDump>& dump) {
  // (comm, sender global rank, receiver comm rank) and (comm, receiver global rank, sender comm
  // rank) are matched through each rank's comm-local rank.
  std::map<std::pair<std::string, int>, int> comm_rank_to_global;
  for (const auto& [rank, d] : dump) {
    for (const auto& c : d.comms) comm_rank_to_global[{c.at("comm_id"), c.at("comm_rank")}] = rank;
  }
  using Link = std::tuple<std::string, int, int>;  // comm, from global rank, to global rank
  std::map<Link, std::vector<nlohmann::json>> sends, recvs;
  for (const auto& [rank, d] : dump) {
    for (const auto& r : d.records) {
      const std::string op = r.at("op");
      if (op != "send" && op != "recv") continue;
      auto peer = comm_rank_to_global.find({r.at("comm_id"), r.at("peer")});
      ASSERT_NE(peer, comm_rank_to_global.end()) << "unknown peer in " << r.dump();
      if (op == "send") {
        sends[{r.at("comm_id"), rank, peer->second}].push_back(r);
      } else {
        recvs[{r.at("comm_id"), peer->second, rank}].push_back(r);
      }
    }
  }
  EXPECT_EQ(sends.size(), recvs.size()) << "some links have sends without receives or vice versa";
  for (const auto& [link, s] : sends) {
    const auto& [comm, from, to] = link;
    const auto& r = recvs[link];
    ASSERT_EQ(s.size(), r.size()) << "comm " << comm << " link " << from << "->" << to << ": "
                                  << s.size() << " sends, " << r.size() << " receives";
    for (size_t i = 0; i < s.size(); ++i) {
      EXPECT_EQ(s[i].at("seq").get<uint64_t>(), i + 1) << "send seq on " << from << "->" << to;
      EXPECT_EQ(r[i].at("seq").get<uint64_t>(), i + 1) << "recv seq on " << from << "->" << to;
      EXPECT_EQ(s[i].at("count"), r[i].at("count")) << from << "->" << to << " #" << i + 1;
      EXPECT_EQ(s[i].at("dtype"), r[i].at("dtype")) << from << "->" << to << " #" << i + 1;
    }
  }
}

}  // namespace ncclscope::testing
