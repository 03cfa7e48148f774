// Communicator table entries published at the entry of a creation call: readable (identity and
// name) while the call blocks, rewritten in place when it returns, withdrawn when it fails. The
// concurrent case runs under ThreadSanitizer in CI.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <thread>

#include "tests/trace/temp_dir.h"
#include "trace/ring_layout.h"
#include "trace/ring_reader.h"
#include "trace/ring_writer.h"

namespace ncclscope::trace {
namespace {

std::unique_ptr<RingWriter> MakeCommTableWriter(const std::string& dir,
                                                uint32_t comm_capacity = 256) {
  RingOptions o;
  o.dir = dir;
  o.record_capacity = 64;
  o.comm_capacity = comm_capacity;
  std::string error;
  auto w = RingWriter::Create(o, &error);
  EXPECT_NE(w, nullptr) << error;
  return w;
}

RingSnapshot Read(const RingWriter& w) {
  std::string error;
  auto s = ReadRingFile(w.path(), &error);
  EXPECT_TRUE(s) << error;
  return s ? *s : RingSnapshot{};
}

// A split child as known at the call's entry: identity and name, not yet rank, size or handle.
CommInfo AtEntry(uint64_t id) {
  CommInfo c;
  c.id = id;
  c.parent_id = 0x1234;
  c.origin = kCommFromSplit;
  c.color = 3;
  c.key = 1;
  c.split_index = 2;
  c.created_monotonic_ns = 100;
  c.name = "dp";
  return c;
}

CommInfo Returned(uint64_t id) {
  CommInfo c = AtEntry(id);
  c.rank = 1;
  c.nranks = 4;
  c.cuda_device = 5;
  c.created_monotonic_ns = 200;
  c.handle = 0xfeed;
  c.name = "ignored: the name published at entry stays";
  return c;
}

TEST(CommTablePending, EntryIsReadableWhileTheCallBlocksThenCompletedInPlace) {
  testing::TempDir tmp;
  auto w = MakeCommTableWriter(tmp.path());
  const uint32_t index = w->AddPendingComm(AtEntry(0xabc));
  ASSERT_NE(index, kNoCommEntry);

  RingSnapshot s = Read(*w);
  ASSERT_EQ(s.comms.size(), 1u);
  EXPECT_TRUE(s.comms[0].pending);
  EXPECT_EQ(s.comms[0].id, 0xabcu);
  EXPECT_EQ(s.comms[0].name, "dp");
  EXPECT_EQ(s.comms[0].parent_id, 0x1234u);
  EXPECT_EQ(s.comms[0].color, 3);
  EXPECT_EQ(s.comms[0].rank, -1);
  EXPECT_EQ(s.comms[0].nranks, -1);
  EXPECT_EQ(s.comms[0].handle, 0u);

  w->CompleteComm(index, Returned(0xabc));
  s = Read(*w);
  ASSERT_EQ(s.comms.size(), 1u) << "completed in place, not added a second time";
  EXPECT_FALSE(s.comms[0].pending);
  EXPECT_EQ(s.comms[0].id, 0xabcu);
  EXPECT_EQ(s.comms[0].name, "dp");
  EXPECT_EQ(s.comms[0].rank, 1);
  EXPECT_EQ(s.comms[0].nranks, 4);
  EXPECT_EQ(s.comms[0].cuda_device, 5);
  EXPECT_EQ(s.comms[0].created_monotonic_ns, 200);
  EXPECT_EQ(s.comms[0].handle, 0xfeedu);
}

TEST(CommTablePending, WithdrawnEntryIsSkipped) {
  testing::TempDir tmp;
  auto w = MakeCommTableWriter(tmp.path());
  const uint32_t failed = w->AddPendingComm(AtEntry(1));
  CommInfo ok = Returned(2);
  ASSERT_TRUE(w->AddComm(ok));
  w->WithdrawComm(failed);
  const RingSnapshot s = Read(*w);
  ASSERT_EQ(s.comms.size(), 1u);
  EXPECT_EQ(s.comms[0].id, 2u);
  EXPECT_EQ(s.dropped_comms, 0u);
}

TEST(CommTablePending, FullTableDropsAreCountedOnceByAddComm) {
  testing::TempDir tmp;
  auto w = MakeCommTableWriter(tmp.path(), 1);
  ASSERT_NE(w->AddPendingComm(AtEntry(1)), kNoCommEntry);
  EXPECT_EQ(w->AddPendingComm(AtEntry(2)), kNoCommEntry);
  EXPECT_EQ(Read(*w).dropped_comms, 0u) << "a creation that fails was never a communicator";
  EXPECT_FALSE(w->AddComm(Returned(2)));
  EXPECT_EQ(Read(*w).dropped_comms, 1u);
}

// A writer killed between the two halves of the rewrite leaves the entry "updating" for good: its
// communicator and name still read, as pending, with what the call returned unknown.
TEST(CommTablePending, EntryLeftMidRewriteStillNamesItsCommunicator) {
  testing::TempDir tmp;
  auto w = MakeCommTableWriter(tmp.path());
  CommInfo published = Returned(7);
  published.name = "dp";
  const uint32_t index = w->AddPendingComm(published);
  const int fd = open(w->path().c_str(), O_WRONLY);
  ASSERT_GE(fd, 0);
  const uint32_t updating = kCommEntryUpdating;
  ASSERT_EQ(pwrite(fd, &updating, sizeof updating,
                   static_cast<off_t>(kHeaderBytes + index * sizeof(CommEntry))),
            static_cast<ssize_t>(sizeof updating));
  close(fd);
  const RingSnapshot s = Read(*w);
  ASSERT_EQ(s.comms.size(), 1u);
  EXPECT_TRUE(s.comms[0].pending);
  EXPECT_EQ(s.comms[0].id, 7u);
  EXPECT_EQ(s.comms[0].name, "dp");
  EXPECT_EQ(s.comms[0].rank, -1);
  EXPECT_EQ(s.comms[0].nranks, -1);
}

// Readers racing the rewrite see each entry either as published at entry or as completed, never a
// mix of the two.
TEST(CommTablePending, ConcurrentReaderNeverSeesAHalfCompletedEntry) {
  testing::TempDir tmp;
  constexpr uint32_t kComms = 2000;
  auto w = MakeCommTableWriter(tmp.path(), kComms);
  std::atomic<bool> done{false};
  std::atomic<uint64_t> pending_seen{0}, complete_seen{0};
  std::thread reader([&] {
    for (bool finished = false; !finished;) {
      finished = done.load();
      for (const CommInfo& c : Read(*w).comms) {
        ASSERT_EQ(c.name, "dp");
        if (c.pending) {
          ASSERT_EQ(c.rank, -1);
          ASSERT_EQ(c.nranks, -1);
          ASSERT_EQ(c.handle, 0u);
          ++pending_seen;
        } else {
          ASSERT_EQ(c.rank, 1) << "entry " << c.id;
          ASSERT_EQ(c.nranks, 4);
          ASSERT_EQ(c.cuda_device, 5);
          ASSERT_EQ(c.handle, 0xfeedu);
          ++complete_seen;
        }
      }
    }
  });
  for (uint32_t i = 0; i < kComms; ++i) {
    const uint32_t index = w->AddPendingComm(AtEntry(i + 1));
    ASSERT_NE(index, kNoCommEntry);
    w->CompleteComm(index, Returned(i + 1));
  }
  done = true;
  reader.join();
  EXPECT_GT(complete_seen.load(), 0u);
  const RingSnapshot s = Read(*w);
  ASSERT_EQ(s.comms.size(), kComms);
  for (const CommInfo& c : s.comms) EXPECT_FALSE(c.pending);
}

}  // namespace
}  // namespace ncclscope::trace
