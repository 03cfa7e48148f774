// A *.ring entry that is not a regular file (a FIFO, a device, a directory, a dangling symlink) is
// refused with an error naming it, at once: opening a FIFO would block the reader until a writer
// appears, which hangs analyze, dump, a scrape and the in-process watchdog.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <future>
#include <optional>
#include <string>

#include "tests/trace/temp_dir.h"
#include "trace/ring_reader.h"
#include "trace/ring_writer.h"
#include "trace/trace_set.h"

namespace ncclscope::trace {
namespace {

std::string WriteRankZeroRing(const std::string& dir) {
  RingOptions o;
  o.dir = dir;
  o.record_capacity = 64;
  o.global_rank = 0;
  o.world_size = 1;
  std::string error;
  auto w = RingWriter::Create(o, &error);
  EXPECT_TRUE(w) << error;
  RecordData r{};
  r.op = static_cast<uint32_t>(OpType::kAllReduce);
  w->Append(r, false);
  return w ? w->path() : "";
}

// Runs read(), and if it is still blocked after a few seconds (a reader that opened the FIFO
// blocking), opens the FIFO's write end so the reader wakes up, then fails: the test reports the
// regression instead of hanging.
template <typename Read>
auto Bounded(const std::string& fifo, Read read) {
  auto result = std::async(std::launch::async, read);
  if (result.wait_for(std::chrono::seconds(10)) != std::future_status::ready) {
    ADD_FAILURE() << "reading " << fifo << " blocked";
    const int fd = open(fifo.c_str(), O_WRONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd >= 0) close(fd);
  }
  return result.get();
}

std::string ReadError(const std::string& path) {
  std::string error;
  EXPECT_FALSE(ReadRingFile(path, &error)) << path;
  return error;
}

TEST(RingFileTypes, FifoIsRefusedWithoutBlocking) {
  testing::TempDir tmp;
  const std::string fifo = tmp.path() + "/job.ring";
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  const std::string error = Bounded(fifo, [&] { return ReadError(fifo); });
  EXPECT_EQ(error, fifo + ": not a regular file (fifo)");
}

TEST(RingFileTypes, DeviceDirectoryAndDanglingSymlinkAreNamed) {
  testing::TempDir tmp;
  const std::string zero = tmp.path() + "/zero.ring";
  const std::string dir = tmp.path() + "/dir.ring";
  const std::string dangling = tmp.path() + "/gone.ring";
  ASSERT_EQ(symlink("/dev/zero", zero.c_str()), 0);
  ASSERT_EQ(mkdir(dir.c_str(), 0700), 0);
  ASSERT_EQ(symlink((tmp.path() + "/nothing-here").c_str(), dangling.c_str()), 0);
  EXPECT_EQ(ReadError(zero), zero + ": not a regular file (character device)");
  EXPECT_EQ(ReadError(dir), dir + ": not a regular file (directory)");
  EXPECT_EQ(ReadError(dangling), dangling + ": dangling symlink");
}

TEST(RingFileTypes, SymlinkToARingIsRead) {
  testing::TempDir tmp;
  const std::string ring = WriteRankZeroRing(tmp.path());
  const std::string link = tmp.path() + "/link.ring";
  ASSERT_EQ(symlink(ring.c_str(), link.c_str()), 0);
  std::string error;
  const std::optional<RingSnapshot> s = ReadRingFile(link, &error);
  ASSERT_TRUE(s) << error;
  EXPECT_EQ(s->records.size(), 1u);
}

TEST(RingFileTypes, ADirectoryReadSkipsThemAndKeepsTheGoodFiles) {
  testing::TempDir tmp;
  const std::string ring = WriteRankZeroRing(tmp.path());
  const std::string fifo = tmp.path() + "/fifo.ring";
  const std::string zero = tmp.path() + "/zero.ring";
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  ASSERT_EQ(symlink("/dev/zero", zero.c_str()), 0);
  TraceSet set;
  std::string error;
  ASSERT_TRUE(Bounded(fifo, [&] { return ReadTraceDir(tmp.path(), &set, &error); })) << error;
  ASSERT_EQ(set.files.size(), 1u);
  EXPECT_EQ(set.files[0].path, ring);
  ASSERT_EQ(set.errors.size(), 2u);
  EXPECT_EQ(set.errors[0], fifo + ": not a regular file (fifo)");
  EXPECT_EQ(set.errors[1], zero + ": not a regular file (character device)");
}

}  // namespace
}  // namespace ncclscope::trace
