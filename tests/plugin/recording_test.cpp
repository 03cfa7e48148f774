// The probe's object code linked into this test, in front of the fake libnccl: records, comm
// table, sequence numbers, groups, completions and fork, read back with the ring reader.
#include <gtest/gtest.h>
#include <nccl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <thread>

#include "../trace/temp_dir.h"
#include "tests/plugin/own_ring.h"
#include "trace/identity.h"
#include "trace/ring_layout.h"
#include "trace/ring_reader.h"

extern "C" void fakenccl_set_async_error(ncclComm_t comm, ncclResult_t err);

namespace ncclscope::plugin {
namespace {

constexpr int kFakeErrno = 4242;  // what every fake NCCL call leaves in errno
ncclscope::testing::TempDir* g_dir = nullptr;

using trace::OpType;
using trace::StoredRecord;

trace::RingSnapshot OwnRing(pid_t pid = getpid()) {
  return ncclscope::testing::OwnRing(g_dir->path(), pid);
}

std::vector<StoredRecord> RecordsOf(OpType op, uint64_t comm_id) {
  std::vector<StoredRecord> out;
  for (const StoredRecord& r : OwnRing().records) {
    if (r.data.op == static_cast<uint32_t>(op) && r.data.comm_id == comm_id) out.push_back(r);
  }
  return out;
}

const trace::CommInfo* CommById(const trace::RingSnapshot& snap, uint64_t id) {
  for (const trace::CommInfo& c : snap.comms) {
    if (c.id == id) return &c;
  }
  return nullptr;
}

struct Comm {
  ncclComm_t handle = nullptr;
  uint64_t id = 0;
};

Comm NewComm(int nranks, int rank) {
  Comm c;
  ncclUniqueId uid;
  EXPECT_EQ(ncclGetUniqueId(&uid), ncclSuccess);
  EXPECT_EQ(ncclCommInitRank(&c.handle, nranks, uid, rank), ncclSuccess);
  c.id = trace::CommIdFromUniqueId(&uid, sizeof uid);
  return c;
}

TEST(RecordingTest, CollectivesAndP2PGetMatchableSequenceNumbers) {
  Comm c = NewComm(4, 1);
  float buf[64];
  const auto stream = reinterpret_cast<cudaStream_t>(0x5);
  for (int i = 0; i < 3; ++i) {
    errno = 0;
    ASSERT_EQ(ncclAllReduce(buf, buf, 8, ncclFloat32, ncclSum, c.handle, stream), ncclSuccess);
    EXPECT_EQ(errno, kFakeErrno);  // the real call's errno reaches the caller unchanged
  }
  ASSERT_EQ(ncclAllGather(buf + 8, buf, 8, ncclFloat32, c.handle, stream), ncclSuccess);
  ASSERT_EQ(ncclSend(buf, 4, ncclInt32, 2, c.handle, stream), ncclSuccess);
  ASSERT_EQ(ncclSend(buf, 4, ncclInt32, 2, c.handle, stream), ncclSuccess);
  ASSERT_EQ(ncclRecv(buf, 4, ncclInt32, 2, c.handle, stream), ncclSuccess);
  ASSERT_EQ(ncclSend(buf, 4, ncclInt32, 3, c.handle, stream), ncclSuccess);
  // A rejected call is recorded with its result but takes no sequence number.
  EXPECT_EQ(ncclAllReduce(buf, buf, 8, ncclFloat32, ncclSum, nullptr, stream), ncclInvalidArgument);

  const auto ars = RecordsOf(OpType::kAllReduce, c.id);
  ASSERT_EQ(ars.size(), 3u);
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(ars[i].data.seq, static_cast<uint64_t>(i + 1));
    EXPECT_EQ(ars[i].data.count, 8u);
    EXPECT_EQ(ars[i].data.dtype, ncclFloat32);
    EXPECT_EQ(ars[i].data.redop, ncclSum);
    EXPECT_EQ(ars[i].data.stream, 0x5u);
    EXPECT_EQ(ars[i].data.result, ncclSuccess);
    EXPECT_EQ(ars[i].data.tid, static_cast<uint32_t>(gettid()));
    EXPECT_TRUE(ars[i].data.flags & trace::kFlagInPlace);
    EXPECT_LE(ars[i].data.t_enter_ns, ars[i].data.t_exit_ns);
  }
  const auto ag = RecordsOf(OpType::kAllGather, c.id);
  ASSERT_EQ(ag.size(), 1u);
  EXPECT_EQ(ag[0].data.seq, 4u);
  EXPECT_TRUE(ag[0].data.flags & trace::kFlagInPlace);  // send is rank 1's block of recv

  const auto sends = RecordsOf(OpType::kSend, c.id);
  ASSERT_EQ(sends.size(), 3u);
  EXPECT_EQ(sends[0].data.peer, 2);
  EXPECT_EQ(sends[0].data.seq, 1u);
  EXPECT_EQ(sends[1].data.seq, 2u);
  EXPECT_EQ(sends[2].data.peer, 3);
  EXPECT_EQ(sends[2].data.seq, 1u);
  const auto recvs = RecordsOf(OpType::kRecv, c.id);
  ASSERT_EQ(recvs.size(), 1u);
  EXPECT_EQ(recvs[0].data.seq, 1u);

  const auto failed = RecordsOf(OpType::kAllReduce, 0);
  ASSERT_FALSE(failed.empty());
  EXPECT_EQ(failed.back().data.result, ncclInvalidArgument);
  EXPECT_EQ(failed.back().data.seq, 0u);

  const trace::RingSnapshot snap = OwnRing();
  const trace::CommInfo* info = CommById(snap, c.id);
  ASSERT_NE(info, nullptr);
  EXPECT_EQ(info->rank, 1);
  EXPECT_EQ(info->nranks, 4);
  EXPECT_EQ(info->origin, trace::kCommFromUniqueId);
  EXPECT_EQ(info->handle, reinterpret_cast<uintptr_t>(c.handle));
  EXPECT_EQ(info->name.rfind("comm", 0), 0u) << info->name;
}

TEST(RecordingTest, DeviceCompletionIsStamped) {
  Comm c = NewComm(2, 0);
  int x = 0;
  ASSERT_EQ(ncclBroadcast(&x, &x, 1, ncclInt32, 0, c.handle, nullptr), ncclSuccess);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  int64_t done = 0;
  while (std::chrono::steady_clock::now() < deadline) {
    const auto recs = RecordsOf(OpType::kBroadcast, c.id);
    ASSERT_EQ(recs.size(), 1u);
    done = recs[0].data.t_device_done_ns;
    if (done > 0) {
      EXPECT_GE(done, recs[0].data.t_exit_ns);
      EXPECT_TRUE(recs[0].data.flags & trace::kFlagCompletionTracked);
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  EXPECT_GT(done, 0) << "device completion never stamped";
  EXPECT_GT(OwnRing().heartbeat_monotonic_ns, 0);
}

TEST(RecordingTest, GroupMembersShareTheGroupIdAndComplete) {
  Comm c = NewComm(2, 0);
  int buf[4];
  ASSERT_EQ(ncclGroupStart(), ncclSuccess);
  ASSERT_EQ(ncclGroupStart(), ncclSuccess);
  ASSERT_EQ(ncclSend(buf, 1, ncclInt32, 1, c.handle, nullptr), ncclSuccess);
  ASSERT_EQ(ncclGroupEnd(), ncclSuccess);
  ASSERT_EQ(ncclRecv(buf, 1, ncclInt32, 1, c.handle, nullptr), ncclSuccess);
  ASSERT_EQ(ncclGroupEnd(), ncclSuccess);
  EXPECT_EQ(ncclGroupEnd(), ncclInvalidUsage);  // unmatched: NCCL's error comes through

  const auto send = RecordsOf(OpType::kSend, c.id);
  const auto recv = RecordsOf(OpType::kRecv, c.id);
  ASSERT_EQ(send.size(), 1u);
  ASSERT_EQ(recv.size(), 1u);
  const uint64_t gid = send[0].data.group_id;
  EXPECT_NE(gid, 0u);
  EXPECT_EQ(recv[0].data.group_id, gid);
  EXPECT_TRUE(send[0].data.flags & trace::kFlagInGroup);
  int starts = 0, ends = 0;
  for (const StoredRecord& r : OwnRing().records) {
    if (r.data.group_id != gid) continue;
    starts += r.data.op == static_cast<uint32_t>(OpType::kGroupStart);
    ends += r.data.op == static_cast<uint32_t>(OpType::kGroupEnd);
  }
  EXPECT_EQ(starts, 2);
  EXPECT_EQ(ends, 2);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (std::chrono::steady_clock::now() < deadline &&
         RecordsOf(OpType::kRecv, c.id)[0].data.t_device_done_ns <= 0) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  EXPECT_GT(RecordsOf(OpType::kSend, c.id)[0].data.t_device_done_ns, 0);
  EXPECT_GT(RecordsOf(OpType::kRecv, c.id)[0].data.t_device_done_ns, 0);
}

TEST(RecordingTest, SplitChildrenGetDerivedIdsAndNames) {
  Comm c = NewComm(4, 2);
  ncclComm_t child = nullptr, none = nullptr, child2 = nullptr;
  ASSERT_EQ(ncclCommSplit(c.handle, 5, 1, &child, nullptr), ncclSuccess);
  ASSERT_EQ(ncclCommSplit(c.handle, NCCL_SPLIT_NOCOLOR, 0, &none, nullptr), ncclSuccess);
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.commName = "tp";
  ASSERT_EQ(ncclCommSplit(c.handle, 7, 0, &child2, &config), ncclSuccess);
  EXPECT_EQ(none, nullptr);

  const trace::RingSnapshot snap = OwnRing();
  const trace::CommInfo* parent = CommById(snap, c.id);
  const trace::CommInfo* first = CommById(snap, trace::CommIdFromSplit(c.id, 1, 5));
  const trace::CommInfo* third = CommById(snap, trace::CommIdFromSplit(c.id, 3, 7));
  ASSERT_NE(parent, nullptr);
  ASSERT_NE(first, nullptr);
  ASSERT_NE(third, nullptr);
  EXPECT_EQ(first->parent_id, c.id);
  EXPECT_EQ(first->origin, trace::kCommFromSplit);
  EXPECT_EQ(first->split_index, 1u);
  EXPECT_EQ(first->color, 5);
  EXPECT_EQ(first->rank, 1);    // the fake ranks split members by key
  EXPECT_EQ(first->nranks, 4);  // learnt from ncclCommCount on the child
  EXPECT_EQ(first->name, parent->name + ".split1.c5");
  EXPECT_EQ(third->name, "tp");

  int x = 0;
  ASSERT_EQ(ncclAllReduce(&x, &x, 1, ncclInt32, ncclSum, child, nullptr), ncclSuccess);
  const auto on_child = RecordsOf(OpType::kAllReduce, first->id);
  ASSERT_EQ(on_child.size(), 1u);
  EXPECT_EQ(on_child[0].data.seq, 1u);
  const auto splits = RecordsOf(OpType::kCommSplit, c.id);
  ASSERT_EQ(splits.size(), 3u);
  EXPECT_EQ(splits[1].data.seq, 2u);
  EXPECT_EQ(splits[1].data.aux >> 32, static_cast<uint32_t>(NCCL_SPLIT_NOCOLOR));
}

TEST(RecordingTest, UnknownAndDestroyedCommunicatorsGetIdZero) {
  Comm c = NewComm(1, 0);
  ncclComm_t hidden = nullptr;
  ncclUniqueId uid{};
  // Created behind the probe's back, as by a library loaded before it.
  ASSERT_EQ(pncclCommInitRank(&hidden, 1, uid, 0), ncclSuccess);
  int x = 0;
  const size_t before = RecordsOf(OpType::kReduce, 0).size();
  ASSERT_EQ(ncclReduce(&x, &x, 1, ncclInt32, ncclMax, 0, hidden, nullptr), ncclSuccess);
  ASSERT_EQ(RecordsOf(OpType::kReduce, 0).size(), before + 1);
  EXPECT_EQ(RecordsOf(OpType::kReduce, 0).back().data.seq, 0u);

  ASSERT_EQ(ncclCommDestroy(c.handle), ncclSuccess);
  EXPECT_EQ(RecordsOf(OpType::kCommDestroy, c.id).size(), 1u);
  // The destroyed handle is forgotten: a later call with it is not attributed to the old id (the
  // fake does not dereference the stale handle).
  ASSERT_EQ(ncclReduce(&x, &x, 1, ncclInt32, ncclMax, 0, c.handle, nullptr), ncclSuccess);
  EXPECT_TRUE(RecordsOf(OpType::kReduce, c.id).empty());
  EXPECT_EQ(pncclCommDestroy(hidden), ncclSuccess);  // behind the probe's back, as it was made
}

TEST(RecordingTest, AsyncErrorsAreRecordedOncePerChange) {
  Comm c = NewComm(2, 0);
  ncclResult_t err = ncclSuccess;
  ASSERT_EQ(ncclCommGetAsyncError(c.handle, &err), ncclSuccess);
  EXPECT_TRUE(RecordsOf(OpType::kCommGetAsyncError, c.id).empty());
  fakenccl_set_async_error(c.handle, ncclRemoteError);
  for (int i = 0; i < 3; ++i) ASSERT_EQ(ncclCommGetAsyncError(c.handle, &err), ncclSuccess);
  EXPECT_EQ(err, ncclRemoteError);
  const auto recs = RecordsOf(OpType::kCommGetAsyncError, c.id);
  ASSERT_EQ(recs.size(), 1u);
  EXPECT_EQ(recs[0].data.aux, static_cast<uint64_t>(ncclRemoteError));
}

TEST(RecordingTest, PureQueriesAreNotRecorded) {
  Comm c = NewComm(3, 2);
  const uint64_t before = OwnRing().write_pos;
  int v = 0;
  EXPECT_EQ(ncclGetVersion(&v), ncclSuccess);
  EXPECT_EQ(v, 22809);
  EXPECT_EQ(ncclCommCount(c.handle, &v), ncclSuccess);
  EXPECT_EQ(v, 3);
  EXPECT_EQ(ncclCommUserRank(c.handle, &v), ncclSuccess);
  EXPECT_EQ(v, 2);
  EXPECT_STREQ(ncclGetErrorString(ncclInternalError), "fake internal");
  EXPECT_EQ(OwnRing().write_pos, before);
}

TEST(RecordingTest, ForkedChildWritesItsOwnRing) {
  Comm c = NewComm(2, 0);
  int x = 0;
  ASSERT_EQ(ncclAllReduce(&x, &x, 1, ncclInt32, ncclSum, c.handle, nullptr), ncclSuccess);
  const uint64_t parent_pos = OwnRing().write_pos;
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    ncclComm_t cc = nullptr;
    ncclUniqueId uid{};
    const bool ok = ncclCommInitRank(&cc, 1, uid, 0) == ncclSuccess &&
                    ncclAllReduce(&x, &x, 1, ncclInt32, ncclSum, cc, nullptr) == ncclSuccess &&
                    ncclAllReduce(&x, &x, 1, ncclInt32, ncclSum, c.handle, nullptr) == ncclSuccess;
    _exit(ok ? 0 : 1);
  }
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0);
  EXPECT_EQ(OwnRing().write_pos, parent_pos);  // nothing of the child landed in our ring
  const trace::RingSnapshot child_ring = OwnRing(child);
  EXPECT_EQ(child_ring.pid, child);
  EXPECT_GE(child_ring.records.size(), 3u);
}

}  // namespace
}  // namespace ncclscope::plugin

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  ncclscope::testing::TempDir dir;
  ncclscope::plugin::g_dir = &dir;
  setenv("NCCLSCOPE_DIR", dir.path().c_str(), 1);
  setenv("NCCLSCOPE_CUDA_LIBRARY", FAKE_CUDA_LIBRARY, 1);
  setenv("NCCLSCOPE_COMPLETION_POLL_US", "50", 1);
  setenv("NCCLSCOPE_HEARTBEAT_MS", "10", 1);
  return RUN_ALL_TESTS();
}
