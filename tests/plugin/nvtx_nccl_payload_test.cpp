// Decoding NCCL 2.28.9's own NVTX payloads (plugin/nvtx/nvtx_nccl_payload.h): every call schema
// read as NCCL builds it (tests/plugin/nccl_nvtx_payloads.h cites where), anything else refused,
// and the per-thread innermost call the profiler side reads.
#include <gtest/gtest.h>

#include <thread>

#include "plugin/nvtx/nvtx_nccl_payload.h"
#include "plugin/nvtx/nvtx_nccl_payload_calls.h"
#include "tests/plugin/nccl_nvtx_payloads.h"

namespace ncclscope::plugin {
namespace {

using nccl_nvtx::CommBytes;
using nccl_nvtx::CommBytesInt;
using nccl_nvtx::CommBytesOp;
using nccl_nvtx::CommBytesRootOp;
using nccl_nvtx::Push;
using trace::OpType;
namespace sid = nccl_nvtx;

constexpr int kNcclMax = 2;  // ncclRedOp_t
constexpr int kNcclAvg = 4;

template <typename T>
NcclDecode Decode(const Push<T>& p, NcclCallArgs* out, const NcclSchemaTable& t = {}) {
  return DecodeNcclPayload(&p.attr, t, out);
}

TEST(NcclPayload, EveryCallOfNccl2289IsDecoded) {
  NcclCallArgs a;
  ASSERT_EQ(Decode(Push<CommBytesOp>(sid::kAllReduce, {0xfeed, 4096, kNcclMax}), &a),
            NcclDecode::kDecoded);
  EXPECT_EQ(a.op, OpType::kAllReduce);
  EXPECT_EQ(a.comm_hash, 0xfeedu);
  EXPECT_EQ(a.bytes, 4096u);
  EXPECT_EQ(a.redop, kNcclMax);
  EXPECT_EQ(a.root, -1);
  EXPECT_EQ(a.peer, -1);

  ASSERT_EQ(Decode(Push<CommBytesRootOp>(sid::kReduce, {7, 64, 3, kNcclAvg}), &a),
            NcclDecode::kDecoded);
  EXPECT_EQ(a.op, OpType::kReduce);
  EXPECT_EQ(a.root, 3);
  EXPECT_EQ(a.redop, kNcclAvg);

  ASSERT_EQ(Decode(Push<CommBytesOp>(sid::kReduceScatter, {7, 32, 1}), &a), NcclDecode::kDecoded);
  EXPECT_EQ(a.op, OpType::kReduceScatter);
  EXPECT_EQ(a.redop, 1);

  const struct {
    uint64_t sid;
    OpType op;
    bool peer;
  } rooted[] = {{sid::kBroadcast, OpType::kBroadcast, false},
                {sid::kGather, OpType::kGather, false},
                {sid::kScatter, OpType::kScatter, false},
                {sid::kSend, OpType::kSend, true},
                {sid::kRecv, OpType::kRecv, true}};
  for (const auto& r : rooted) {
    ASSERT_EQ(Decode(Push<CommBytesInt>(r.sid, {9, 128, 5}), &a), NcclDecode::kDecoded) << r.sid;
    EXPECT_EQ(a.op, r.op);
    EXPECT_EQ(a.bytes, 128u);
    EXPECT_EQ(r.peer ? a.peer : a.root, 5);
    EXPECT_EQ(r.peer ? a.root : a.peer, -1);
    EXPECT_EQ(a.redop, -1);
  }
  for (uint64_t s : {uint64_t{sid::kAllGather}, uint64_t{sid::kAlltoAll}}) {
    ASSERT_EQ(Decode(Push<CommBytes>(s, {11, 256}), &a), NcclDecode::kDecoded);
    EXPECT_EQ(a.op, s == sid::kAllGather ? OpType::kAllGather : OpType::kAlltoAll);
    EXPECT_EQ(a.bytes, 256u);
  }
  // A null communicator: NCCL pushes the range before checking it, with commHash 0.
  ASSERT_EQ(Decode(Push<CommBytesOp>(sid::kAllReduce, {0, 8, 0}), &a), NcclDecode::kDecoded);
  EXPECT_EQ(a.comm_hash, 0u);
}

TEST(NcclPayload, AnythingNotLaidOutAs2289IsRefused) {
  NcclCallArgs a;
  a.redop = 77;  // untouched by a refusal
  // A schema id NCCL 2.28.9 does not have, one below its range, a dynamic one.
  EXPECT_EQ(Decode(Push<CommBytesOp>(20, {1, 8, 0}), &a), NcclDecode::kRefused);
  EXPECT_EQ(Decode(Push<CommBytesOp>(25, {1, 8, 0}), &a), NcclDecode::kRefused);
  {
    Push<CommBytesOp> p(sid::kAllReduce, {1, 8, 0});
    p.data[0].schemaId = 0x1000;
    EXPECT_EQ(DecodeNcclPayload(&p.attr, {}, &a), NcclDecode::kRefused);
  }
  // The right id with another size: an AllReduce without its op, an AllGather with an extra int.
  EXPECT_EQ(Decode(Push<CommBytes>(sid::kAllReduce, {1, 8}), &a), NcclDecode::kRefused);
  EXPECT_EQ(Decode(Push<CommBytesInt>(sid::kAllGather, {1, 8, 0}), &a), NcclDecode::kRefused);
  {
    Push<CommBytesOp> p(sid::kAllReduce, {1, 8, 0});
    p.attr.reserved0 = 2;  // two payloads: not NCCL's shape
    EXPECT_EQ(DecodeNcclPayload(&p.attr, {}, &a), NcclDecode::kRefused);
    p.attr.reserved0 = 1;
    p.data[0].payload = nullptr;
    EXPECT_EQ(DecodeNcclPayload(&p.attr, {}, &a), NcclDecode::kRefused);
    p.attr.payload.ullValue = 0;
    EXPECT_EQ(DecodeNcclPayload(&p.attr, {}, &a), NcclDecode::kRefused);
  }
  // A registration that differed refuses the id even when the size is right.
  NcclSchemaTable t;
  t.Note(sid::kAllReduce, false);
  EXPECT_EQ(Decode(Push<CommBytesOp>(sid::kAllReduce, {1, 8, 0}), &a, t), NcclDecode::kRefused);
  t.Note(sid::kAllReduce, true);  // a later match does not undo it
  EXPECT_EQ(t.Of(sid::kAllReduce), NcclSchemaTable::kDiffers);
  EXPECT_EQ(a.redop, 77);
  // A matching registration accepts; other ids are unaffected.
  t.Note(sid::kSend, true);
  EXPECT_EQ(t.Of(sid::kSend), NcclSchemaTable::kMatches);
  EXPECT_EQ(Decode(Push<CommBytesInt>(sid::kSend, {1, 8, 2}), &a, t), NcclDecode::kDecoded);
}

TEST(NcclPayload, RangesWithoutACallPayloadAreNotRefusals) {
  NcclCallArgs a;
  nvtxEventAttributes_t plain{};  // ncclGroupStart: NCCL_NVTX3_FUNC_RANGE, a name only
  plain.version = NVTX_VERSION;
  plain.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
  EXPECT_EQ(DecodeNcclPayload(&plain, {}, &a), NcclDecode::kNoPayload);
  EXPECT_EQ(DecodeNcclPayload(nullptr, {}, &a), NcclDecode::kNoPayload);
  plain.payloadType = NVTX_PAYLOAD_TYPE_UNSIGNED_INT64;  // a plain payload, not NCCL's
  EXPECT_EQ(DecodeNcclPayload(&plain, {}, &a), NcclDecode::kNoPayload);
  // Attributes too short to hold a payload are never read past their size.
  Push<CommBytesOp> short_attr(sid::kAllReduce, {1, 8, 0});
  short_attr.attr.size = offsetof(nvtxEventAttributes_t, payload);
  EXPECT_EQ(DecodeNcclPayload(&short_attr.attr, {}, &a), NcclDecode::kNoPayload);
  // ncclCommDestroy pushes CommInitRank's schema: NCCL's, but not a call to decode.
  EXPECT_EQ(Decode(Push<nccl_nvtx::CommInitRank>(sid::kCommDestroy, {1, 2, 0, 0}), &a),
            NcclDecode::kNotACall);
}

TEST(NcclPayload, RegisteredSchemasOf2289MatchAndOthersDiffer) {
  for (uint64_t s :
       {sid::kAllGather, sid::kAllReduce, sid::kBroadcast, sid::kReduceScatter, sid::kReduce,
        sid::kSend, sid::kRecv, sid::kAlltoAll, sid::kGather, sid::kScatter}) {
    nccl_nvtx::Schema schema;
    nccl_nvtx::MakeSchema(s, &schema);
    uint32_t index = 99;
    EXPECT_EQ(CheckNcclSchema(&schema.attr, &index), NcclSchemaCheck::kMatches) << s;
    EXPECT_EQ(index, s);
  }
  nccl_nvtx::Schema init;
  nccl_nvtx::MakeSchema(sid::kCommInitRank, &init);
  uint32_t index = 99;
  EXPECT_EQ(CheckNcclSchema(&init.attr, &index), NcclSchemaCheck::kNotACall);
  EXPECT_EQ(CheckNcclSchema(nullptr, &index), NcclSchemaCheck::kNotACall);

  // What a later NCCL might change, each alone: all differ.
  auto differs = [](auto change) {
    nccl_nvtx::Schema s;
    nccl_nvtx::MakeSchema(sid::kReduce, &s);
    change(s);
    uint32_t i = 0;
    return CheckNcclSchema(&s.attr, &i) == NcclSchemaCheck::kDiffers;
  };
  EXPECT_TRUE(differs([](nccl_nvtx::Schema& s) { s.entries[3].offset = 24; }));  // op moved
  EXPECT_TRUE(
      differs([](nccl_nvtx::Schema& s) { s.entries[2].type = nvtx_payload::kEntryUint64; }));
  EXPECT_TRUE(differs([](nccl_nvtx::Schema& s) { s.attr.payloadStaticSize = 32; }));
  EXPECT_TRUE(differs([](nccl_nvtx::Schema& s) { s.attr.numEntries = 3; }));
  EXPECT_TRUE(differs([](nccl_nvtx::Schema& s) { s.attr.numEntries = 1u << 30; }));  // not read
  EXPECT_TRUE(differs([](nccl_nvtx::Schema& s) { s.attr.entries = nullptr; }));
  EXPECT_TRUE(differs([](nccl_nvtx::Schema& s) { s.attr.type = 2; }));  // dynamic
  EXPECT_TRUE(differs([](nccl_nvtx::Schema& s) { s.entries[0].arrayOrUnionDetail = 2; }));
}

// The thread's innermost NCCL range, as the profiler side reads it inside the call.
TEST(NcclCalls, InnermostRangeOfTheThreadOnly) {
  NcclCallArgs a;
  EXPECT_FALSE(CurrentNcclCallArgs(&a)) << "no NCCL range open";
  const NcclPayloadCounts before = GetNcclPayloadCounts();
  Push<CommBytesOp> all_reduce(sid::kAllReduce, {0xabc, 1024, kNcclMax});
  NcclRangePush(&all_reduce.attr);
  ASSERT_TRUE(CurrentNcclCallArgs(&a));
  EXPECT_EQ(a.op, OpType::kAllReduce);
  EXPECT_EQ(a.comm_hash, 0xabcu);
  EXPECT_EQ(a.redop, kNcclMax);

  bool other_thread_sees = true;
  std::thread([&] {
    NcclCallArgs b;
    other_thread_sees = CurrentNcclCallArgs(&b);
  }).join();
  EXPECT_FALSE(other_thread_sees);

  // A nested range without a call (ncclGroupEnd's shape) hides the outer call, and its pop shows
  // it again.
  nvtxEventAttributes_t plain{};
  plain.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
  NcclRangePush(&plain);
  EXPECT_FALSE(CurrentNcclCallArgs(&a));
  Push<CommBytesInt> send(sid::kSend, {0xabc, 8, 3});
  NcclRangePush(&send.attr);
  ASSERT_TRUE(CurrentNcclCallArgs(&a));
  EXPECT_EQ(a.op, OpType::kSend);
  EXPECT_EQ(a.peer, 3);
  NcclRangePop();
  EXPECT_FALSE(CurrentNcclCallArgs(&a));
  NcclRangePop();
  ASSERT_TRUE(CurrentNcclCallArgs(&a));
  EXPECT_EQ(a.op, OpType::kAllReduce);
  NcclRangePop();
  EXPECT_FALSE(CurrentNcclCallArgs(&a));
  NcclRangePop();  // an extra pop is ignored
  EXPECT_FALSE(CurrentNcclCallArgs(&a));

  // A refused payload is counted and gives no call.
  Push<CommBytes> wrong(sid::kAllReduce, {1, 8});
  NcclRangePush(&wrong.attr);
  EXPECT_FALSE(CurrentNcclCallArgs(&a));
  NcclRangePop();
  const NcclPayloadCounts after = GetNcclPayloadCounts();
  EXPECT_EQ(after.decoded - before.decoded, 2u);
  EXPECT_EQ(after.refused - before.refused, 1u);
}

// Pops that never reach the injection (a creation call's nvtxRangePopPayload served by another
// tool) shift the ring: the innermost call is still the right one.
TEST(NcclCalls, MissedPopsDoNotHideLaterCalls) {
  nvtxEventAttributes_t plain{};
  plain.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
  for (int i = 0; i < 9; ++i) NcclRangePush(&plain);  // nine ncclCommInitRank never popped
  NcclCallArgs a;
  Push<CommBytesRootOp> reduce(sid::kReduce, {5, 16, 2, kNcclAvg});
  NcclRangePush(&reduce.attr);
  ASSERT_TRUE(CurrentNcclCallArgs(&a));
  EXPECT_EQ(a.op, OpType::kReduce);
  EXPECT_EQ(a.root, 2);
  NcclRangePop();
  EXPECT_FALSE(CurrentNcclCallArgs(&a));
  for (int i = 0; i < 9; ++i) NcclRangePop();
}

}  // namespace
}  // namespace ncclscope::plugin
