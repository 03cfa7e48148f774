// The presence file a process with a launcher rank writes before any NCCL call
// (RingOptions::presence): small, flagged, named after its pid, readable like any ring file.
#include <gtest/gtest.h>

#include <sys/stat.h>
#include <unistd.h>

#include "tests/trace/temp_dir.h"
#include "trace/ring_reader.h"
#include "trace/ring_writer.h"

namespace ncclscope::trace {
namespace {

RingOptions PresenceOptions(const std::string& dir) {
  RingOptions o;
  o.dir = dir;
  o.presence = true;
  o.record_capacity = 65536;  // ignored for a presence file
  o.comm_capacity = 256;
  o.global_rank = 7;
  o.local_rank = 7;
  o.world_size = 8;
  o.job_id = "job-7";
  o.host = "node0";
  return o;
}

TEST(RingPresence, IsAFlaggedHeaderWithNoRoomForRecords) {
  testing::TempDir tmp;
  std::string error;
  auto w = RingWriter::Create(PresenceOptions(tmp.path()), &error);
  ASSERT_NE(w, nullptr) << error;
  EXPECT_EQ(w->path(), tmp.path() + "/node0-" + std::to_string(getpid()) + "-presence.ring");
  struct stat st {};
  ASSERT_EQ(stat(w->path().c_str(), &st), 0);
  EXPECT_LE(st.st_size, 16384) << "a presence file is one page of header, one of table, one slot";

  auto s = ReadRingFile(w->path(), &error);
  ASSERT_TRUE(s) << error;
  EXPECT_NE(s->flags & kHeaderPresence, 0u);
  EXPECT_EQ(s->global_rank, 7);
  EXPECT_EQ(s->world_size, 8);
  EXPECT_EQ(s->pid, getpid());
  EXPECT_EQ(s->record_capacity, 1u);
  EXPECT_TRUE(s->records.empty());
  EXPECT_TRUE(s->comms.empty());
  EXPECT_EQ(ListRingFiles(tmp.path(), &error), std::vector<std::string>{w->path()});
}

TEST(RingPresence, ASecondOneOfTheSamePidReplacesTheFirst) {
  // A program that execs another in its place keeps its pid: the new image's presence file takes
  // the place of the old one's, so the directory never holds two for one process.
  testing::TempDir tmp;
  std::string error;
  auto first = RingWriter::Create(PresenceOptions(tmp.path()), &error);
  ASSERT_NE(first, nullptr) << error;
  RingOptions o = PresenceOptions(tmp.path());
  o.global_rank = 5;
  auto second = RingWriter::Create(o, &error);
  ASSERT_NE(second, nullptr) << error;
  EXPECT_EQ(second->path(), first->path());
  const std::vector<std::string> files = ListRingFiles(tmp.path(), &error);
  ASSERT_EQ(files.size(), 1u);
  auto s = ReadRingFile(files[0], &error);
  ASSERT_TRUE(s) << error;
  EXPECT_EQ(s->global_rank, 5);
}

TEST(RingPresence, AnOrdinaryRingIsNoPresence) {
  testing::TempDir tmp;
  RingOptions o = PresenceOptions(tmp.path());
  o.presence = false;
  std::string error;
  auto w = RingWriter::Create(o, &error);
  ASSERT_NE(w, nullptr) << error;
  auto s = ReadRingFile(w->path(), &error);
  ASSERT_TRUE(s) << error;
  EXPECT_EQ(s->flags & kHeaderPresence, 0u);
  EXPECT_EQ(s->record_capacity, 65536u);
}

}  // namespace
}  // namespace ncclscope::trace
