#include <gtest/gtest.h>

#include <sys/stat.h>

#include "tests/trace/temp_dir.h"
#include "trace/clock.h"
#include "trace/ring_reader.h"
#include "trace/ring_writer.h"

namespace ncclscope::trace {
namespace {

RecordData MakeRecord(uint64_t seq) {
  RecordData r{};
  r.comm_id = 0xabc;
  r.seq = seq;
  r.count = 1000 + seq;
  r.op = static_cast<uint32_t>(OpType::kAllReduce);
  r.dtype = 7;
  r.redop = 0;
  r.peer = -1;
  r.t_enter_ns = MonotonicNs();
  r.t_exit_ns = r.t_enter_ns + 10;
  return r;
}

std::unique_ptr<RingWriter> MakeWriter(const std::string& dir, uint64_t capacity) {
  RingOptions o;
  o.dir = dir;
  o.record_capacity = capacity;
  o.global_rank = 3;
  o.local_rank = 1;
  o.world_size = 8;
  o.job_id = "job-7";
  std::string error;
  auto w = RingWriter::Create(o, &error);
  EXPECT_NE(w, nullptr) << error;
  return w;
}

TEST(Ring, RoundTripsHeaderCommsAndRecords) {
  testing::TempDir tmp;
  auto w = MakeWriter(tmp.path(), 128);
  CommInfo c;
  c.id = 0xabc;
  c.rank = 3;
  c.nranks = 8;
  c.name = "world";
  c.origin = kCommFromUniqueId;
  ASSERT_TRUE(w->AddComm(c));
  for (uint64_t i = 1; i <= 10; ++i) w->Append(MakeRecord(i), false);

  std::string error;
  auto s = ReadRingFile(w->path(), &error);
  ASSERT_TRUE(s) << error;
  EXPECT_EQ(s->global_rank, 3);
  EXPECT_EQ(s->local_rank, 1);
  EXPECT_EQ(s->world_size, 8);
  EXPECT_EQ(s->job_id, "job-7");
  EXPECT_EQ(s->pid, getpid());
  ASSERT_EQ(s->comms.size(), 1u);
  EXPECT_EQ(s->comms[0].name, "world");
  EXPECT_EQ(s->comms[0].nranks, 8);
  ASSERT_EQ(s->records.size(), 10u);
  for (uint64_t i = 0; i < 10; ++i) {
    EXPECT_EQ(s->records[i].index, i);
    EXPECT_EQ(s->records[i].data.seq, i + 1);
    EXPECT_EQ(s->records[i].data.count, 1001 + i);
    EXPECT_EQ(s->records[i].data.t_device_done_ns, kDoneUntracked);
  }
  EXPECT_EQ(s->overwritten, 0u);
  EXPECT_EQ(s->torn_records, 0u);
}

TEST(Ring, FileIsPrivate) {
  testing::TempDir tmp;
  auto w = MakeWriter(tmp.path() + "/nested/dir", 64);
  struct stat st;
  ASSERT_EQ(stat(w->path().c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  ASSERT_EQ(stat((tmp.path() + "/nested/dir").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0700u);
}

TEST(Ring, WrapKeepsNewestAndCountsOverwritten) {
  testing::TempDir tmp;
  auto w = MakeWriter(tmp.path(), 64);
  for (uint64_t i = 1; i <= 200; ++i) w->Append(MakeRecord(i), false);
  std::string error;
  auto s = ReadRingFile(w->path(), &error);
  ASSERT_TRUE(s) << error;
  EXPECT_EQ(s->overwritten, 136u);
  ASSERT_EQ(s->records.size(), 64u);
  EXPECT_EQ(s->records.front().data.seq, 137u);
  EXPECT_EQ(s->records.back().data.seq, 200u);
}

TEST(Ring, DeviceCompletionLandsOnlyOnItsOwnRecord) {
  testing::TempDir tmp;
  auto w = MakeWriter(tmp.path(), 64);
  uint64_t first = w->Append(MakeRecord(1), true);
  uint64_t second = w->Append(MakeRecord(2), true);
  EXPECT_TRUE(w->CompleteDevice(second, 5555));
  EXPECT_FALSE(w->CompleteDevice(second, 6666));                     // already completed
  for (int i = 0; i < 64; ++i) w->Append(MakeRecord(3 + i), false);  // wraps over `first`
  EXPECT_FALSE(w->CompleteDevice(first, 7777));

  std::string error;
  auto s = ReadRingFile(w->path(), &error);
  ASSERT_TRUE(s) << error;
  for (const auto& r : s->records) {
    EXPECT_NE(r.data.t_device_done_ns, 7777) << "a late completion overwrote a newer record";
  }
}

TEST(Ring, PendingCompletionIsVisibleToReaders) {
  testing::TempDir tmp;
  auto w = MakeWriter(tmp.path(), 64);
  w->Append(MakeRecord(1), true);
  std::string error;
  auto s = ReadRingFile(w->path(), &error);
  ASSERT_TRUE(s) << error;
  ASSERT_EQ(s->records.size(), 1u);
  EXPECT_TRUE(IsPending(s->records[0].data.t_device_done_ns));
}

TEST(Ring, CallOpenedAtEntryIsVisibleThenClosedInPlace) {
  testing::TempDir tmp;
  auto w = MakeWriter(tmp.path(), 64);
  RecordData open = MakeRecord(1);
  open.t_exit_ns = 0;
  open.result = kResultInCall;
  const uint64_t slot = w->Append(open, false);
  std::string error;
  auto during = ReadRingFile(w->path(), &error);
  ASSERT_TRUE(during) << error;
  EXPECT_EQ(during->records.at(0).data.result, kResultInCall);

  RecordData closed = open;
  closed.t_exit_ns = open.t_enter_ns + 99;
  closed.result = 3;
  closed.aux = 77;
  EXPECT_TRUE(w->CloseCall(slot, closed));
  auto after = ReadRingFile(w->path(), &error);
  ASSERT_TRUE(after) << error;
  EXPECT_EQ(after->records.at(0).data.result, 3);
  EXPECT_EQ(after->records.at(0).data.aux, 77u);
  EXPECT_EQ(after->records.at(0).data.t_exit_ns, open.t_enter_ns + 99);
  EXPECT_EQ(after->records.at(0).data.t_device_done_ns, kDoneUntracked);
}

TEST(Ring, ClosingARecordTheRingWrappedOverIsDropped) {
  testing::TempDir tmp;
  auto w = MakeWriter(tmp.path(), 64);
  const uint64_t slot = w->Append(MakeRecord(1), false);
  for (int i = 0; i < 64; ++i) w->Append(MakeRecord(2 + i), false);
  EXPECT_FALSE(w->CloseCall(slot, MakeRecord(999)));
  std::string error;
  auto s = ReadRingFile(w->path(), &error);
  ASSERT_TRUE(s) << error;
  EXPECT_EQ(s->dropped_records, 1u);
  for (const auto& r : s->records) EXPECT_NE(r.data.seq, 999u);
}

TEST(Ring, CommTableOverflowIsCounted) {
  testing::TempDir tmp;
  RingOptions o;
  o.dir = tmp.path();
  o.comm_capacity = 2;
  std::string error;
  auto w = RingWriter::Create(o, &error);
  ASSERT_TRUE(w) << error;
  CommInfo c;
  for (int i = 0; i < 5; ++i) {
    c.id = i + 1;
    w->AddComm(c);
  }
  auto s = ReadRingFile(w->path(), &error);
  ASSERT_TRUE(s) << error;
  EXPECT_EQ(s->comms.size(), 2u);
  EXPECT_EQ(s->dropped_comms, 3u);
}

}  // namespace
}  // namespace ncclscope::trace
