// The comm table entry of a communicator is in the ring while its creation call still blocks
// (ncclCommInitRank*, ncclCommSplit, ncclCommShrink), with its id and ncclConfig_t commName, so a
// rank stuck there shows what it waits for; when the call returns the entry is completed in
// place, and when it fails the entry is withdrawn. The fake NCCL runs a hook inside each creation
// call, where real NCCL waits for the other members: the ring is read there.
#include <gtest/gtest.h>
#include <nccl.h>
#include <unistd.h>

#include <cstddef>
#include <string>
#include <vector>

#include "../trace/temp_dir.h"
#include "trace/identity.h"
#include "trace/ring_layout.h"
#include "trace/ring_reader.h"

extern "C" void fakenccl_set_create_hook(void (*on_create)(void*, int, int), void* arg);
extern "C" void fakenccl_set_async_error(ncclComm_t comm, ncclResult_t err);

namespace ncclscope::plugin {
namespace {

ncclscope::testing::TempDir* g_dir = nullptr;

// This process's comm table entries with id `id`.
std::vector<trace::CommInfo> EntriesOf(uint64_t id) {
  std::string error;
  for (const std::string& path : trace::ListRingFiles(g_dir->path(), &error)) {
    auto snap = trace::ReadRingFile(path, &error);
    if (!snap || snap->pid != getpid()) continue;
    std::vector<trace::CommInfo> out;
    for (const trace::CommInfo& c : snap->comms) {
      if (c.id == id) out.push_back(c);
    }
    return out;
  }
  ADD_FAILURE() << "no ring file of this process in " << g_dir->path() << ": " << error;
  return {};
}

// What the ring held for one communicator id while the creation call was inside NCCL.
struct InsideCall {
  uint64_t id = 0;
  int calls = 0;
  std::vector<trace::CommInfo> entries;
};

void Capture(void* arg, int, int) {
  auto* in = static_cast<InsideCall*>(arg);
  ++in->calls;
  in->entries = EntriesOf(in->id);
}

class CreationEntry : public ::testing::Test {
 protected:
  void Watch(uint64_t id) {
    inside_.id = id;
    fakenccl_set_create_hook(Capture, &inside_);
  }
  void TearDown() override { fakenccl_set_create_hook(nullptr, nullptr); }

  // The one entry seen inside the call; fails the test when there was not exactly one.
  trace::CommInfo SeenInside() {
    EXPECT_EQ(inside_.calls, 1);
    EXPECT_EQ(inside_.entries.size(), 1u) << "entries of " << std::hex << inside_.id;
    return inside_.entries.empty() ? trace::CommInfo{} : inside_.entries[0];
  }
  // The one entry after the call returned.
  static trace::CommInfo After(uint64_t id) {
    const auto entries = EntriesOf(id);
    EXPECT_EQ(entries.size(), 1u) << "one entry, completed in place";
    return entries.empty() ? trace::CommInfo{} : entries[0];
  }

  InsideCall inside_;
};

struct Root {
  ncclComm_t handle = nullptr;
  ncclUniqueId uid{};
  uint64_t id = 0;
};

Root NewUid() {
  Root r;
  EXPECT_EQ(ncclGetUniqueId(&r.uid), ncclSuccess);
  r.id = trace::CommIdFromUniqueId(&r.uid, sizeof r.uid);
  return r;
}

TEST_F(CreationEntry, InitRankConfigNameIsInTheRingWhileTheCallBlocks) {
  Root world = NewUid();
  Watch(world.id);
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.commName = "world";
  ASSERT_EQ(ncclCommInitRankConfig(&world.handle, 8, world.uid, 3, &config), ncclSuccess);

  const trace::CommInfo in = SeenInside();
  EXPECT_TRUE(in.pending);
  EXPECT_EQ(in.name, "world");
  EXPECT_EQ(in.origin, trace::kCommFromUniqueId);
  EXPECT_EQ(in.rank, 3);  // the call's arguments say rank and size
  EXPECT_EQ(in.nranks, 8);
  EXPECT_EQ(in.handle, 0u);  // no handle before the call returns

  const trace::CommInfo after = After(world.id);
  EXPECT_FALSE(after.pending);
  EXPECT_EQ(after.name, "world");
  EXPECT_EQ(after.rank, 3);
  EXPECT_EQ(after.nranks, 8);
  EXPECT_EQ(after.handle, reinterpret_cast<uintptr_t>(world.handle));
}

TEST_F(CreationEntry, SplitNameIsInTheRingWhileTheCallBlocks) {
  Root world = NewUid();
  ASSERT_EQ(ncclCommInitRank(&world.handle, 4, world.uid, 2), ncclSuccess);
  const uint64_t child_id = trace::CommIdFromSplit(world.id, 1, 6);
  Watch(child_id);
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.commName = "dp";
  ncclComm_t dp = nullptr;
  ASSERT_EQ(ncclCommSplit(world.handle, 6, 1, &dp, &config), ncclSuccess);

  const trace::CommInfo in = SeenInside();
  EXPECT_TRUE(in.pending);
  EXPECT_EQ(in.name, "dp");
  EXPECT_EQ(in.origin, trace::kCommFromSplit);
  EXPECT_EQ(in.parent_id, world.id);
  EXPECT_EQ(in.split_index, 1u);
  EXPECT_EQ(in.color, 6);
  EXPECT_EQ(in.key, 1);
  EXPECT_EQ(in.rank, -1);  // a split's rank and size are NCCL's answer
  EXPECT_EQ(in.nranks, -1);

  const trace::CommInfo after = After(child_id);
  EXPECT_FALSE(after.pending);
  EXPECT_EQ(after.name, "dp");
  EXPECT_EQ(after.rank, 1);  // the fake ranks split members by key
  EXPECT_EQ(after.nranks, 4);
  EXPECT_EQ(after.handle, reinterpret_cast<uintptr_t>(dp));
}

TEST_F(CreationEntry, UnnamedSplitAndShrinkGetTheirDerivedNamesAtEntry) {
  Root world = NewUid();
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.commName = "base";
  ASSERT_EQ(ncclCommInitRankConfig(&world.handle, 4, world.uid, 0, &config), ncclSuccess);
  Watch(trace::CommIdFromSplit(world.id, 1, 2));
  ncclComm_t child = nullptr;
  ASSERT_EQ(ncclCommSplit(world.handle, 2, 0, &child, nullptr), ncclSuccess);
  EXPECT_EQ(SeenInside().name, "base.split1.c2");

  inside_ = {};
  Watch(trace::CommIdFromShrink(world.id, 2));
  ncclComm_t shrunk = nullptr;
  int excluded = 3;
  ASSERT_EQ(ncclCommShrink(world.handle, &excluded, 1, &shrunk, nullptr, NCCL_SHRINK_DEFAULT),
            ncclSuccess);
  const trace::CommInfo in = SeenInside();
  EXPECT_TRUE(in.pending);
  EXPECT_EQ(in.name, "base.shrink2");
  EXPECT_EQ(in.origin, trace::kCommFromShrink);
  EXPECT_EQ(After(trace::CommIdFromShrink(world.id, 2)).nranks, 3);
}

TEST_F(CreationEntry, SplitWithoutColorAnnouncesNothing) {
  Root world = NewUid();
  ASSERT_EQ(ncclCommInitRank(&world.handle, 2, world.uid, 0), ncclSuccess);
  Watch(trace::CommIdFromSplit(world.id, 1, NCCL_SPLIT_NOCOLOR));
  ncclComm_t none = nullptr;
  ASSERT_EQ(ncclCommSplit(world.handle, NCCL_SPLIT_NOCOLOR, 0, &none, nullptr), ncclSuccess);
  EXPECT_EQ(inside_.calls, 1);
  EXPECT_TRUE(inside_.entries.empty());
  for (const auto& c : EntriesOf(trace::CommIdFromSplit(world.id, 1, NCCL_SPLIT_NOCOLOR))) {
    ADD_FAILURE() << "unexpected entry " << c.name;
  }
}

TEST_F(CreationEntry, FailedCreationLeavesNoEntry) {
  Root bad = NewUid();
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.commName = "never";
  // Rank out of range: NCCL rejects the call.
  EXPECT_EQ(ncclCommInitRankConfig(&bad.handle, 2, bad.uid, 5, &config), ncclInvalidArgument);
  EXPECT_TRUE(EntriesOf(bad.id).empty());
}

TEST_F(CreationEntry, NonBlockingSplitStaysPendingUntilNcclSaysItIsDone) {
  Root world = NewUid();
  ASSERT_EQ(ncclCommInitRank(&world.handle, 4, world.uid, 0), ncclSuccess);
  const uint64_t child_id = trace::CommIdFromSplit(world.id, 1, 0);
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.blocking = 0;
  config.commName = "ep";
  ncclComm_t ep = nullptr;
  ASSERT_EQ(ncclCommSplit(world.handle, 0, 2, &ep, &config), ncclInProgress);
  trace::CommInfo c = After(child_id);
  EXPECT_TRUE(c.pending) << "the creation is still running in the background";
  EXPECT_EQ(c.name, "ep");

  ncclResult_t async = ncclSuccess;
  ASSERT_EQ(ncclCommGetAsyncError(ep, &async), ncclSuccess);
  EXPECT_EQ(async, ncclInProgress);
  EXPECT_TRUE(After(child_id).pending);
  fakenccl_set_async_error(ep, ncclSuccess);
  ASSERT_EQ(ncclCommGetAsyncError(ep, &async), ncclSuccess);
  c = After(child_id);
  EXPECT_FALSE(c.pending);
  EXPECT_EQ(c.name, "ep");
  EXPECT_EQ(c.rank, 2);
  EXPECT_EQ(c.nranks, 4);
  EXPECT_EQ(c.handle, reinterpret_cast<uintptr_t>(ep));
}

// A config that is not an initialized ncclConfig_t, or one from an nccl.h that predates commName,
// is not read for a name; a name is kept to what the table holds.
TEST_F(CreationEntry, NamesAreReadOnlyFromConfigsThatHoldThem) {
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.commName = "shadow";
  config.magic = 0;
  Root a = NewUid();
  ASSERT_EQ(ncclCommInitRankConfig(&a.handle, 1, a.uid, 0, &config), ncclSuccess);
  EXPECT_EQ(After(a.id).name.rfind("comm", 0), 0u) << After(a.id).name;

  config = NCCL_CONFIG_INITIALIZER;
  config.commName = "shadow";
  config.size = offsetof(ncclConfig_t, commName);  // an older struct ends before the field
  Root b = NewUid();
  ASSERT_EQ(ncclCommInitRankConfig(&b.handle, 1, b.uid, 0, &config), ncclSuccess);
  EXPECT_EQ(After(b.id).name.rfind("comm", 0), 0u) << After(b.id).name;

  const std::string long_name(5000, 'n');
  config = NCCL_CONFIG_INITIALIZER;
  config.commName = long_name.c_str();
  Root c = NewUid();
  ASSERT_EQ(ncclCommInitRankConfig(&c.handle, 1, c.uid, 0, &config), ncclSuccess);
  EXPECT_EQ(After(c.id).name, std::string(trace::kCommNameBytes - 1, 'n'));
}

TEST_F(CreationEntry, InitRankScalableIsAnnouncedToo) {
  ncclUniqueId ids[2];
  ASSERT_EQ(ncclGetUniqueId(&ids[0]), ncclSuccess);
  ASSERT_EQ(ncclGetUniqueId(&ids[1]), ncclSuccess);
  const uint64_t id = trace::CommIdFromUniqueId(ids, sizeof ids);
  Watch(id);
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.commName = "scaled";
  ncclComm_t comm = nullptr;
  ASSERT_EQ(ncclCommInitRankScalable(&comm, 16, 9, 2, ids, &config), ncclSuccess);
  const trace::CommInfo in = SeenInside();
  EXPECT_TRUE(in.pending);
  EXPECT_EQ(in.name, "scaled");
  EXPECT_EQ(in.rank, 9);
  EXPECT_EQ(in.nranks, 16);
  EXPECT_FALSE(After(id).pending);
}

}  // namespace
}  // namespace ncclscope::plugin

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  ncclscope::testing::TempDir dir;
  ncclscope::plugin::g_dir = &dir;
  setenv("NCCLSCOPE_DIR", dir.path().c_str(), 1);
  setenv("NCCLSCOPE_CUDA_LIBRARY", FAKE_CUDA_LIBRARY, 1);
  return RUN_ALL_TESTS();
}
