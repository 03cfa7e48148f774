#include "plugin/runtime/comm_map.h"

#include <gtest/gtest.h>

#include <atomic>
#include <thread>
#include <vector>

namespace ncclscope::plugin {
namespace {

const void* Handle(uintptr_t i) {
  return reinterpret_cast<const void*>(0x10000 + i * 64);
}

std::unique_ptr<CommState> State(uint64_t id) {
  auto s = std::make_unique<CommState>();
  s->id = id;
  return s;
}

TEST(CommMapTest, UnknownAndNullHandlesAreNotFound) {
  CommMap map(64);
  EXPECT_EQ(map.Find(nullptr), nullptr);
  EXPECT_EQ(map.Find(Handle(1)), nullptr);
  EXPECT_EQ(map.Insert(nullptr, State(1)), nullptr);
}

TEST(CommMapTest, EraseThenReuseOfTheSameAddress) {
  CommMap map(64);
  ASSERT_NE(map.Insert(Handle(1), State(11)), nullptr);
  EXPECT_EQ(map.Find(Handle(1))->id, 11u);
  map.Erase(Handle(1));
  EXPECT_EQ(map.Find(Handle(1)), nullptr);
  ASSERT_NE(map.Insert(Handle(1), State(12)), nullptr);
  EXPECT_EQ(map.Find(Handle(1))->id, 12u);
}

TEST(CommMapTest, FullTableRefusesNewHandles) {
  CommMap map(16);
  for (uintptr_t i = 0; i < 16; ++i) ASSERT_NE(map.Insert(Handle(i), State(i + 1)), nullptr);
  EXPECT_EQ(map.Insert(Handle(99), State(100)), nullptr);
  for (uintptr_t i = 0; i < 16; ++i) EXPECT_EQ(map.Find(Handle(i))->id, i + 1);
  EXPECT_EQ(map.Find(Handle(99)), nullptr);
}

// Writers insert while readers look up: a reader sees either nothing or the right state.
TEST(CommMapTest, ConcurrentInsertsAndLookups) {
  constexpr uintptr_t kWriters = 4;
  constexpr uintptr_t kPerWriter = 400;
  CommMap map(4096);
  std::atomic<bool> stop{false};
  std::atomic<long> wrong{0};
  std::vector<std::thread> readers;
  for (int r = 0; r < 3; ++r) {
    readers.emplace_back([&] {
      while (!stop.load()) {
        for (uintptr_t i = 0; i < kWriters * kPerWriter; ++i) {
          if (const CommState* s = map.Find(Handle(i)); s != nullptr && s->id != i + 1) ++wrong;
        }
      }
    });
  }
  std::vector<std::thread> writers;
  for (uintptr_t w = 0; w < kWriters; ++w) {
    writers.emplace_back([&, w] {
      for (uintptr_t i = w * kPerWriter; i < (w + 1) * kPerWriter; ++i) {
        map.Insert(Handle(i), State(i + 1));
      }
    });
  }
  for (auto& t : writers) t.join();
  stop = true;
  for (auto& t : readers) t.join();
  EXPECT_EQ(wrong.load(), 0);
  for (uintptr_t i = 0; i < kWriters * kPerWriter; ++i) {
    ASSERT_NE(map.Find(Handle(i)), nullptr) << i;
    EXPECT_EQ(map.Find(Handle(i))->id, i + 1);
  }
}

TEST(CommStateTest, PeerCountersAreSeparatePerDirectionAndPeer) {
  CommState s;
  EXPECT_EQ(s.NextP2PSeq(true, 0), 0u);  // size not known yet
  s.SetRanks(0, 3);
  EXPECT_EQ(s.NextP2PSeq(true, 1), 1u);
  EXPECT_EQ(s.NextP2PSeq(true, 1), 2u);
  EXPECT_EQ(s.NextP2PSeq(false, 1), 1u);
  EXPECT_EQ(s.NextP2PSeq(true, 2), 1u);
  EXPECT_EQ(s.NextP2PSeq(true, 3), 0u);
  EXPECT_EQ(s.NextP2PSeq(false, -1), 0u);
}

}  // namespace
}  // namespace ncclscope::plugin
