#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <numeric>
#include <tuple>

#include "sim/scenario/data_pattern.h"
#include "sim/scenario/dtype_codec.h"
#include "sim/scenario/names.h"
#include "sim/scenario/op_data.h"

namespace ncclscope::sim {
namespace {

double roundTo(double v, ncclDataType_t t) {
  unsigned char buf[8];
  encodeValue(v, t, buf);
  return decodeValue(buf, t);
}

// Reduces the ranks' inputs the way a library might: in the dtype, one rank at a time, in the
// given order; floating avg premultiplies by 1/n as NCCL does.
double reduceInDtype(const PatternKey& key, const PatternShape& s, size_t i,
                     const std::vector<int>& order) {
  const double pre = s.redop == RedOp::kPreMulSum ? roundTo(s.scalar, s.dtype)
                     : s.redop == RedOp::kAvg && dtypeIsFloat(s.dtype)
                         ? roundTo(1.0 / s.nranks, s.dtype)
                         : 1.0;
  double acc = 0;
  for (size_t k = 0; k < order.size(); ++k) {
    const double v = roundTo(inputValue(key, s, order[k], i) * pre, s.dtype);
    if (k == 0) {
      acc = v;
    } else if (s.redop == RedOp::kProd) {
      acc = roundTo(acc * v, s.dtype);
    } else if (s.redop == RedOp::kMax) {
      acc = std::max(acc, v);
    } else if (s.redop == RedOp::kMin) {
      acc = std::min(acc, v);
    } else {
      acc = roundTo(acc + v, s.dtype);
    }
  }
  if (s.redop == RedOp::kAvg && !dtypeIsFloat(s.dtype)) acc = std::floor(acc / s.nranks);
  return acc;
}

// For every dtype, reduction and job size the inputs are exact in the dtype and every reduction
// order gives the locally computed result (within tolerance only where rounding is inherent).
TEST(DataPattern, ReductionsAreExactInEveryOrder) {
  for (int t = 0; t < ncclNumTypes; ++t) {
    for (RedOp op :
         {RedOp::kSum, RedOp::kProd, RedOp::kMax, RedOp::kMin, RedOp::kAvg, RedOp::kPreMulSum}) {
      for (int n : {1, 2, 3, 4, 7, 8, 32}) {
        const PatternShape s{OpKind::kAllReduce, op, static_cast<ncclDataType_t>(t),
                             op == RedOp::kPreMulSum ? 2.0 : 1.0, n};
        const PatternKey key{5, 1, 3, 2};
        SCOPED_TRACE(fmt::format("{} {} n={}", dtypeName(s.dtype), redOpName(op), n));
        std::vector<int> order(static_cast<size_t>(n));
        std::iota(order.begin(), order.end(), 0);
        std::vector<int> reverse(order.rbegin(), order.rend());
        for (size_t i = 0; i < 64; ++i) {
          for (int r = 0; r < n; ++r) {
            const double v = inputValue(key, s, r, i);
            ASSERT_EQ(roundTo(v, s.dtype), v);
          }
          const double want = reducedValue(key, s, i);
          const double tol = tolerance(s);
          ASSERT_LE(std::fabs(reduceInDtype(key, s, i, order) - want), tol) << "index " << i;
          ASSERT_LE(std::fabs(reduceInDtype(key, s, i, reverse) - want), tol) << "index " << i;
        }
      }
    }
  }
}

TEST(DataPattern, DependsOnEveryCoordinate) {
  const PatternShape s{OpKind::kAllGather, RedOp::kSum, ncclInt32, 1.0, 4};
  auto sig = [&](PatternKey k, int src) {
    double acc = 0;
    for (size_t i = 0; i < 32; ++i) acc = acc * 3 + inputValue(k, s, src, i);
    return acc;
  };
  const PatternKey base{1, 0, 0, 0};
  EXPECT_NE(sig(base, 0), sig(base, 1));
  EXPECT_NE(sig(base, 0), sig({2, 0, 0, 0}, 0));
  EXPECT_NE(sig(base, 0), sig({1, 1, 0, 0}, 0));
  EXPECT_NE(sig(base, 0), sig({1, 0, 1, 0}, 0));
  EXPECT_NE(sig(base, 0), sig({1, 0, 0, 1}, 0));
}

// The checker accepts what a correct all-gather delivers and names the first wrong offset.
TEST(OpData, CheckerAcceptsCorrectDataAndNamesTheWrongOffset) {
  const int n = 4;
  OpCall call;
  call.kind = OpKind::kAllGather;
  call.count = 5;
  call.dtype = ncclBfloat16;
  const PatternKey key{3, 2, 1, 0};
  std::vector<OpBuffers> bufs;
  for (int r = 0; r < n; ++r) bufs.push_back(prepareBuffers(call, key, r, n));
  const size_t chunk = call.count * dtypeSize(call.dtype);
  for (int r = 0; r < n; ++r) {
    std::memcpy(&bufs[1].recv[static_cast<size_t>(r) * chunk],
                bufs[static_cast<size_t>(r)].send.data(), chunk);
  }
  EXPECT_EQ(checkResult(call, key, 1, n, bufs[1]), std::nullopt);
  bufs[1].recv[size_t{7} * 2] ^= 0x40;
  const auto wrong = checkResult(call, key, 1, n, bufs[1]);
  ASSERT_TRUE(wrong.has_value());
  EXPECT_NE(wrong->find("offset 7: got"), std::string::npos) << *wrong;
}

TEST(OpData, PipelinePeersAndWrongPeer) {
  OpCall call;
  call.kind = OpKind::kPipeline;
  call.count = 4;
  const PatternKey key{};
  EXPECT_EQ(prepareBuffers(call, key, 0, 4).send_peer, 1);
  EXPECT_EQ(prepareBuffers(call, key, 0, 4).recv_peer, -1);
  EXPECT_EQ(prepareBuffers(call, key, 3, 4).send_peer, -1);
  EXPECT_EQ(prepareBuffers(call, key, 3, 4).recv_peer, 2);
  call.direction = PipeDirection::kBackward;
  EXPECT_EQ(prepareBuffers(call, key, 3, 4).send_peer, 2);
  EXPECT_EQ(prepareBuffers(call, key, 0, 4).recv_peer, 1);
  call.direction = PipeDirection::kForward;
  call.peer_shift = 1;
  EXPECT_EQ(prepareBuffers(call, key, 0, 4).send_peer, 2);
}

TEST(OpData, ExchangePairsNeighboursAndOrdersTheirCalls) {
  OpCall call;
  call.kind = OpKind::kPipeline;
  call.direction = PipeDirection::kExchange;
  call.count = 4;
  const PatternKey key{};
  for (const auto& [me, partner] : {std::pair{0, 1}, {1, 0}, {2, 3}, {3, 2}}) {
    const OpBuffers b = prepareBuffers(call, key, me, 5);
    EXPECT_EQ(b.send_peer, partner) << me;
    EXPECT_EQ(b.recv_peer, partner) << me;
    // Ungrouped, the lower rank of a pair sends first so the pair cannot wait on each other.
    EXPECT_EQ(b.send_first, me % 2 == 0) << me;
  }
  const OpBuffers odd_one = prepareBuffers(call, key, 4, 5);  // no partner in a group of 5
  EXPECT_EQ(odd_one.send_peer, -1);
  EXPECT_EQ(odd_one.recv_peer, -1);
  call.send_first = true;  // the send_first fault
  EXPECT_TRUE(prepareBuffers(call, key, 1, 4).send_first);
  call.direction = PipeDirection::kForward;
  EXPECT_TRUE(prepareBuffers(call, key, 2, 4).send_first);
}

// NCCL's in-place forms: AlltoAll sendbuff == recvbuff; at the root, Gather's sendbuff is
// recvbuff + root x count and Scatter's recvbuff is sendbuff + root x count. The one buffer holds
// the rank's input; what the library leaves untouched (the root's own slot) already checks.
TEST(OpData, InPlaceBuffersHoldTheInputWhereNcclReadsIt) {
  const int n = 3;
  const int root = 1;
  OpCall call;
  call.count = 2;
  call.dtype = ncclInt32;
  call.root = root;
  call.in_place = true;
  const PatternKey key{4, 1, 0, 0};
  const size_t es = 4;
  const size_t slot = call.count * es;

  call.kind = OpKind::kAllToAll;
  const OpBuffers a = prepareBuffers(call, key, 0, n);
  EXPECT_TRUE(a.in_place);
  EXPECT_EQ(a.in_offset, 0u);
  EXPECT_EQ(a.recv_offset, 0u);
  EXPECT_EQ(a.recv, a.send);

  call.kind = OpKind::kGather;
  const OpBuffers g = prepareBuffers(call, key, root, n);
  EXPECT_TRUE(g.in_place);
  EXPECT_EQ(g.in_offset, call.count * root);
  EXPECT_EQ(std::memcmp(&g.recv[root * slot], g.send.data(), slot), 0);
  EXPECT_FALSE(prepareBuffers(call, key, 0, n).in_place) << "away from the root: no such form";

  call.kind = OpKind::kScatter;
  OpBuffers s = prepareBuffers(call, key, root, n);
  EXPECT_TRUE(s.in_place);
  EXPECT_EQ(s.recv_offset, call.count * root);
  EXPECT_EQ(s.recv, s.send);
  EXPECT_EQ(checkResult(call, key, root, n, s), std::nullopt);
  s.recv[root * slot] ^= 0x01;
  EXPECT_TRUE(checkResult(call, key, root, n, s).has_value()) << "checked at the root's slot";
  EXPECT_FALSE(prepareBuffers(call, key, 0, n).in_place);
}

TEST(OpData, BufferSizesFollowNcclCounts) {
  OpCall call;
  call.count = 3;
  call.dtype = ncclFloat64;
  const PatternKey key{};
  for (auto [kind, send, recv] :
       std::vector<std::tuple<OpKind, size_t, size_t>>{{OpKind::kAllReduce, 3, 3},
                                                       {OpKind::kAllGather, 3, 12},
                                                       {OpKind::kReduceScatter, 12, 3},
                                                       {OpKind::kAllToAll, 12, 12},
                                                       {OpKind::kGather, 3, 12},
                                                       {OpKind::kScatter, 12, 3}}) {
    call.kind = kind;
    const OpBuffers b = prepareBuffers(call, key, 1, 4);
    EXPECT_EQ(b.send_count, send) << opKindName(kind);
    EXPECT_EQ(b.recv_count, recv) << opKindName(kind);
    EXPECT_EQ(b.recv.size(), recv * 8);
  }
}

}  // namespace
}  // namespace ncclscope::sim
