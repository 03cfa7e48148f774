// A writer preempted in the middle of a record while other threads lap the whole ring: the lapping
// writer must drop its record (counted) instead of mixing its words into the older writer's, and
// readers must neither return the mixed slot nor call a dropped record torn. The preempted writer
// is simulated by writing its ownership marker into the slot through a second mapping of the file.
#include <gtest/gtest.h>

#include "tests/trace/slot_commit.h"
#include "tests/trace/temp_dir.h"
#include "trace/ring_layout.h"
#include "trace/ring_reader.h"
#include "trace/ring_writer.h"

namespace ncclscope::trace {
namespace {

constexpr uint64_t kCapacity = 64;

RecordData Numbered(uint64_t seq) {
  RecordData r{};
  r.comm_id = 1;
  r.seq = seq;
  r.op = static_cast<uint32_t>(OpType::kAllReduce);
  r.t_enter_ns = static_cast<int64_t>(seq);
  return r;
}

std::unique_ptr<RingWriter> SmallRing(const std::string& dir) {
  RingOptions o;
  o.dir = dir;
  o.record_capacity = kCapacity;
  std::string error;
  auto w = RingWriter::Create(o, &error);
  EXPECT_TRUE(w) << error;
  return w;
}

TEST(RingLappedWriter, LappingWriterDropsItsRecordWhileTheOlderWriterOwnsTheSlot) {
  testing::TempDir tmp;
  auto w = SmallRing(tmp.path());
  ASSERT_TRUE(w);
  testing::SlotCommit slot0(*w, 0);
  std::string error;

  // Index 0 is "being written" by a writer that was preempted after claiming the slot.
  const uint64_t preempted = w->Append(Numbered(1000), true);
  ASSERT_EQ(preempted, 0u);
  slot0.OwnedBy(preempted);
  for (uint64_t i = 1; i <= kCapacity; ++i) w->Append(Numbered(i), true);
  // Index 64 maps to slot 0, still owned: that record is dropped, its completion lands nowhere.
  EXPECT_FALSE(w->CompleteDevice(kCapacity, 5));
  EXPECT_EQ(w->header().dropped_records.load(), 1u);
  EXPECT_EQ(slot0.commit().load(), kSlotWriting | (preempted + 1)) << "the lapping writer took it";

  auto mid = ReadRingFile(w->path(), &error);
  ASSERT_TRUE(mid) << error;
  EXPECT_EQ(mid->records.size(), kCapacity - 1);
  EXPECT_EQ(mid->torn_records, 1u) << "slot 0 is mid-write";

  // The older writer finishes: the slot holds its (older) whole record, which is not index 64.
  slot0.CommittedBy(preempted);
  auto after = ReadRingFile(w->path(), &error);
  ASSERT_TRUE(after) << error;
  EXPECT_EQ(after->records.size(), kCapacity - 1);
  EXPECT_EQ(after->torn_records, 0u) << "a dropped record is counted once, as dropped";
  EXPECT_EQ(after->dropped_records, 1u);
  for (const auto& r : after->records) {
    EXPECT_NE(r.index, kCapacity);
    EXPECT_EQ(r.data.seq, r.index) << "every record read is the one written at its index";
  }

  // The next lap claims the slot normally.
  const uint64_t next = w->Append(Numbered(kCapacity + 1), true);
  EXPECT_EQ(next, kCapacity + 1);
  for (uint64_t i = kCapacity + 2; i <= 2 * kCapacity; ++i) w->Append(Numbered(i), true);
  EXPECT_EQ(slot0.commit().load(), 2 * kCapacity + 1);
  RecordData back{};
  ASSERT_TRUE(w->ReadSlot(2 * kCapacity, &back));
  EXPECT_EQ(back.seq, 2 * kCapacity);
}

TEST(RingLappedWriter, AWriterThatWasLappedBeforeClaimingDropsItsRecord) {
  testing::TempDir tmp;
  auto w = SmallRing(tmp.path());
  ASSERT_TRUE(w);
  testing::SlotCommit slot0(*w, 0);
  for (uint64_t i = 0; i < kCapacity; ++i) w->Append(Numbered(i), false);
  // A newer lap's record (index 128) already sits in slot 0, so the writer of index 64 (preempted
  // between taking its index and claiming the slot) must not overwrite it.
  slot0.CommittedBy(2 * kCapacity);
  EXPECT_EQ(w->Append(Numbered(kCapacity), false), kCapacity);
  EXPECT_EQ(slot0.commit().load(), 2 * kCapacity + 1);
  EXPECT_EQ(w->header().dropped_records.load(), 1u);
}

}  // namespace
}  // namespace ncclscope::trace
