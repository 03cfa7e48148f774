#include "plugin/runtime/completion_tracker.h"

#include <gtest/gtest.h>

#include "../trace/temp_dir.h"
#include "fake_driver.h"
#include "plugin/runtime/group_tracker.h"
#include "trace/ring_reader.h"

namespace ncclscope::plugin {
namespace {

using testing::FakeDriverState;
using testing::LoadFake;

class TrackerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    testing::g_fake = &fake_;
    trace::RingOptions options;
    options.dir = dir_.path();
    options.record_capacity = 256;
    std::string error;
    ring_ = trace::RingWriter::Create(options, &error);
    ASSERT_NE(ring_, nullptr) << error;
  }
  void TearDown() override { testing::g_fake = nullptr; }

  uint64_t AppendPending() {
    trace::RecordData d{};
    d.op = static_cast<uint32_t>(trace::OpType::kAllReduce);
    return ring_->Append(d, true);
  }
  trace::RingSnapshot Read() {
    std::string error;
    auto snap = trace::ReadRingFile(ring_->path(), &error);
    EXPECT_TRUE(snap.has_value()) << error;
    return *snap;
  }
  int64_t DoneOf(uint64_t slot) {
    for (const auto& r : Read().records) {
      if (r.index == slot) return r.data.t_device_done_ns;
    }
    return 0;
  }

  FakeDriverState fake_;
  ncclscope::testing::TempDir dir_;
  std::unique_ptr<trace::RingWriter> ring_;
};

TEST_F(TrackerTest, CompletionIsStampedOnlyAfterTheEventFires) {
  CompletionTracker tracker(ring_.get(), 4, LoadFake);
  const uint64_t slot = AppendPending();
  const int32_t token = tracker.RecordOn(reinterpret_cast<cudaStream_t>(0x77));
  ASSERT_GE(token, 0);
  tracker.Submit(token, &slot, 1);
  EXPECT_EQ(tracker.PollOnce(1000), 1u);
  EXPECT_TRUE(trace::IsPending(DoneOf(slot)));
  fake_.done[fake_.records.at(0).first] = true;
  EXPECT_EQ(tracker.PollOnce(2000), 0u);
  EXPECT_EQ(DoneOf(slot), 2000);
  EXPECT_EQ(fake_.records.at(0).second, reinterpret_cast<CUstream>(0x77));
}

TEST_F(TrackerTest, ExhaustedPoolCountsUntrackedAndEventsAreReused) {
  CompletionTracker tracker(ring_.get(), 2, LoadFake);
  const auto stream = reinterpret_cast<cudaStream_t>(1);
  const int32_t a = tracker.RecordOn(stream);
  const int32_t b = tracker.RecordOn(stream);
  ASSERT_GE(a, 0);
  ASSERT_GE(b, 0);
  EXPECT_EQ(tracker.RecordOn(stream), -1);
  EXPECT_EQ(Read().untracked_completions, 1u);
  const uint64_t s1 = AppendPending();
  tracker.Submit(a, &s1, 1);
  fake_.done[fake_.records.at(0).first] = true;
  tracker.PollOnce(5);
  EXPECT_GE(tracker.RecordOn(stream), 0);  // the fired event went back to the pool
  EXPECT_EQ(fake_.created, 2);             // and was not created again
}

TEST_F(TrackerTest, DriverErrorsMarkRecordsUntracked) {
  CompletionTracker tracker(ring_.get(), 4, LoadFake);
  const uint64_t slot = AppendPending();
  const int32_t token = tracker.RecordOn(nullptr);
  tracker.Submit(token, &slot, 1);
  fake_.query_error = CUDA_ERROR_DEINITIALIZED;
  EXPECT_EQ(tracker.PollOnce(9), 0u);
  EXPECT_EQ(DoneOf(slot), trace::kDoneUntracked);
  fake_.query_error = CUDA_SUCCESS;
  fake_.record_result = CUDA_ERROR_INVALID_HANDLE;
  EXPECT_EQ(tracker.RecordOn(nullptr), -1);
  EXPECT_EQ(Read().untracked_completions, 2u);
}

TEST_F(TrackerTest, EventIsRecreatedWhenTheContextChanges) {
  CompletionTracker tracker(ring_.get(), 1, LoadFake);
  const uint64_t slot = AppendPending();
  tracker.Submit(tracker.RecordOn(nullptr), &slot, 1);
  fake_.done[1] = true;
  tracker.PollOnce(1);
  fake_.context = 0x2;
  ASSERT_GE(tracker.RecordOn(nullptr), 0);
  EXPECT_EQ(fake_.created, 2);
  EXPECT_EQ(fake_.destroyed, 1);
}

TEST_F(TrackerTest, MissingDriverDisablesTrackingWithoutCounting) {
  CompletionTracker tracker(ring_.get(), 4, [](cuda::Driver*, std::string* e) {
    *e = "no driver here";
    return false;
  });
  EXPECT_FALSE(tracker.Ready());
  EXPECT_EQ(tracker.RecordOn(nullptr), -1);
  EXPECT_EQ(Read().untracked_completions, 0u);
}

// Grouped calls: one event per stream at the outermost end, shared by that stream's records.
TEST_F(TrackerTest, GroupRecordsOneEventPerStreamAtTheOutermostEnd) {
  CompletionTracker tracker(ring_.get(), 8, LoadFake);
  ASSERT_TRUE(tracker.Ready());
  ThreadState ts{};
  const auto s1 = reinterpret_cast<cudaStream_t>(0x10);
  const auto s2 = reinterpret_cast<cudaStream_t>(0x20);
  const uint64_t outer = OnGroupStart(ts);
  EXPECT_EQ(OnGroupStart(ts), outer);  // nested levels share the id
  const uint64_t a = AppendPending(), b = AppendPending(), c = AppendPending();
  ASSERT_TRUE(AddPending(ts, a, s1));
  ASSERT_TRUE(AddPending(ts, b, s2));
  ASSERT_TRUE(AddPending(ts, c, s1));
  EXPECT_EQ(OnGroupEnd(ts, &tracker, true), outer);
  EXPECT_TRUE(fake_.records.empty());  // inner end launches nothing
  EXPECT_EQ(OnGroupEnd(ts, &tracker, true), outer);
  ASSERT_EQ(fake_.records.size(), 2u);
  EXPECT_EQ(ts.group_id, 0u);
  EXPECT_EQ(ts.pending_count, 0u);
  // Only s2's event fires: b completes, a and c (sharing s1's event) wait.
  const int ev_s2 = fake_.records[0].second == reinterpret_cast<CUstream>(s2)
                        ? fake_.records[0].first
                        : fake_.records[1].first;
  fake_.done[ev_s2] = true;
  EXPECT_EQ(tracker.PollOnce(100), 2u);
  EXPECT_EQ(DoneOf(b), 100);
  EXPECT_TRUE(trace::IsPending(DoneOf(a)));
  for (auto& [ev, fired] : fake_.done) fired = true;
  EXPECT_EQ(tracker.PollOnce(200), 0u);
  EXPECT_EQ(DoneOf(a), 200);
  EXPECT_EQ(DoneOf(c), 200);
  EXPECT_GT(OnGroupStart(ts), outer);  // the next group gets a new id
}

TEST_F(TrackerTest, FailedGroupAbandonsItsRecords) {
  CompletionTracker tracker(ring_.get(), 8, LoadFake);
  ThreadState ts{};
  OnGroupStart(ts);
  const uint64_t a = AppendPending();
  AddPending(ts, a, nullptr);
  OnGroupEnd(ts, &tracker, /*launched=*/false);
  EXPECT_TRUE(fake_.records.empty());
  EXPECT_EQ(DoneOf(a), trace::kDoneUntracked);
  EXPECT_EQ(Read().untracked_completions, 1u);
  EXPECT_EQ(OnGroupEnd(ts, &tracker, true), 0u);  // unmatched end: nothing open
}

TEST_F(TrackerTest, PendingListIsBounded) {
  ThreadState ts{};
  OnGroupStart(ts);
  for (uint32_t i = 0; i < kMaxPendingInGroup; ++i) ASSERT_TRUE(AddPending(ts, i, nullptr));
  EXPECT_FALSE(AddPending(ts, 9999, nullptr));
}

}  // namespace
}  // namespace ncclscope::plugin
