// The names torch writes for operations and dtypes, both ways (trace/flight_recorder/fr_names.h).
#include <gtest/gtest.h>

#include "trace/flight_recorder/fr_names.h"

namespace ncclscope::flight_recorder {
namespace {

using trace::OpType;

TEST(FrNamesTest, EveryCollectiveNameWrittenIsReadBackAsItsOperation) {
  for (OpType op : {OpType::kAllReduce, OpType::kBroadcast, OpType::kReduce, OpType::kAllGather,
                    OpType::kReduceScatter, OpType::kAlltoAll, OpType::kGather, OpType::kScatter}) {
    const std::string name = ProfilingNameOf(op);
    ASSERT_FALSE(name.empty()) << static_cast<int>(op);
    const FrOpName parsed = ParseProfilingName(name);
    EXPECT_EQ(parsed.op, op) << name;
    EXPECT_FALSE(parsed.closes_coalesced) << name;
  }
  EXPECT_EQ(ProfilingNameOf(OpType::kAllReduce), "nccl:all_reduce");
  EXPECT_EQ(ProfilingNameOf(OpType::kAlltoAll), "nccl:all_to_all");
  EXPECT_EQ(ProfilingNameOf(OpType::kGroupEnd), "");
}

TEST(FrNamesTest, TorchsOtherTitlesNameTheSameNcclOperation) {
  const std::pair<const char*, OpType> cases[] = {
      {"nccl:all_reduce_barrier", OpType::kAllReduce},
      {"nccl:allreduce_coalesced", OpType::kAllReduce},
      {"nccl:_broadcast_oop", OpType::kBroadcast},
      {"nccl:_reduce_oop", OpType::kReduce},
      {"nccl:_all_gather_base", OpType::kAllGather},
      {"nccl:all_gather_into_tensor_coalesced", OpType::kAllGather},
      {"nccl:_reduce_scatter_base", OpType::kReduceScatter},
      {"nccl:reduce_scatter_tensor_coalesced", OpType::kReduceScatter},
      {"xccl:all_to_all", OpType::kAlltoAll},
      {"nccl:split", OpType::kUnknown},
  };
  for (const auto& [name, op] : cases) {
    const FrOpName parsed = ParseProfilingName(name);
    EXPECT_EQ(parsed.op, op) << name;
    EXPECT_FALSE(parsed.closes_coalesced) << name;
  }
}

TEST(FrNamesTest, ClosingEntriesOfCoalescedGroupsAreRecognised) {
  FrOpName n = ParseProfilingName("nccl:coalesced");
  EXPECT_TRUE(n.closes_coalesced);
  EXPECT_EQ(n.op, OpType::kUnknown);
  n = ParseProfilingName("nccl:ALLGATHER_coalesced");
  EXPECT_TRUE(n.closes_coalesced);
  EXPECT_EQ(n.op, OpType::kAllGather);
  n = ParseProfilingName("nccl:REDUCE_SCATTER_coalesced");
  EXPECT_TRUE(n.closes_coalesced);
  EXPECT_EQ(n.op, OpType::kReduceScatter);
}

TEST(FrNamesTest, SendAndRecvCarryTheirGroupLocalRanks) {
  EXPECT_EQ(ProfilingNameOf(OpType::kSend, 1, 0), "nccl:send 1->0");
  EXPECT_EQ(ProfilingNameOf(OpType::kRecv, 0, 1), "nccl:recv 0<-1");
  FrOpName n = ParseProfilingName("nccl:send 12->3");
  EXPECT_EQ(n.op, OpType::kSend);
  EXPECT_EQ(n.self, 12);
  EXPECT_EQ(n.peer, 3);
  n = ParseProfilingName("nccl:recv 3<-12");
  EXPECT_EQ(n.op, OpType::kRecv);
  EXPECT_EQ(n.self, 3);
  EXPECT_EQ(n.peer, 12);
  n = ParseProfilingName("nccl:send 1-x");
  EXPECT_EQ(n.op, OpType::kSend);
  EXPECT_EQ(n.self, -1);
  EXPECT_EQ(n.peer, -1);
}

TEST(FrNamesTest, DtypesMapBothWays) {
  for (int32_t d = 0; d <= 11; ++d) {
    const std::string name = TorchNameOfNcclDtype(d);
    ASSERT_FALSE(name.empty()) << d;
    EXPECT_EQ(NcclDtypeOfTorchName(name), d) << name;
  }
  EXPECT_STREQ(TorchNameOfNcclDtype(7), "Float");
  EXPECT_STREQ(TorchNameOfNcclDtype(9), "BFloat16");
  EXPECT_STREQ(TorchNameOfNcclDtype(12), "");
  EXPECT_STREQ(TorchNameOfNcclDtype(-1), "");
  EXPECT_EQ(NcclDtypeOfTorchName("Bool"), 1);
  EXPECT_EQ(NcclDtypeOfTorchName("Short"), -1);
  EXPECT_EQ(NcclDtypeOfTorchName("ComplexFloat"), -1);
}

}  // namespace
}  // namespace ncclscope::flight_recorder
