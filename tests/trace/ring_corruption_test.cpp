// A reader must reject damaged files with an error naming the file and the damage, never crash.
#include <gtest/gtest.h>

#include <fcntl.h>
#include <unistd.h>

#include <cstring>
#include <fstream>
#include <iterator>

#include "tests/trace/temp_dir.h"
#include "trace/ring_layout.h"
#include "trace/ring_reader.h"
#include "trace/ring_writer.h"

namespace ncclscope::trace {
namespace {

std::string WriteRing(const std::string& dir) {
  RingOptions o;
  o.dir = dir;
  o.record_capacity = 64;
  std::string error;
  auto w = RingWriter::Create(o, &error);
  EXPECT_TRUE(w) << error;
  RecordData r{};
  r.op = static_cast<uint32_t>(OpType::kAllReduce);
  w->Append(r, false);
  return w->path();
}

std::string Load(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

std::string ErrorOf(std::string bytes) {
  std::string error;
  auto s = ParseRing(bytes.data(), bytes.size(), "x.ring", &error);
  EXPECT_FALSE(s);
  return error;
}

TEST(RingCorruption, TruncatedFileIsRejected) {
  testing::TempDir tmp;
  std::string path = WriteRing(tmp.path());
  ASSERT_EQ(truncate(path.c_str(), 6000), 0);
  std::string error;
  EXPECT_FALSE(ReadRingFile(path, &error));
  EXPECT_NE(error.find(path), std::string::npos);
  EXPECT_NE(error.find("truncated"), std::string::npos) << error;
}

TEST(RingCorruption, TinyFileIsRejected) {
  EXPECT_NE(ErrorOf("abc").find("smaller than"), std::string::npos);
}

TEST(RingCorruption, BadMagicVersionAndCapacityAreNamed) {
  testing::TempDir tmp;
  const std::string good = Load(WriteRing(tmp.path()));

  std::string bad_magic = good;
  bad_magic[0] = 'X';
  EXPECT_NE(ErrorOf(bad_magic).find("bad magic"), std::string::npos);

  std::string bad_version = good;
  uint32_t v = 99;
  std::memcpy(&bad_version[offsetof(FileHeader, format_version)], &v, sizeof v);
  EXPECT_NE(ErrorOf(bad_version).find("format version 99"), std::string::npos);

  std::string bad_capacity = good;
  uint64_t cap = 100;  // not a power of two
  std::memcpy(&bad_capacity[offsetof(FileHeader, record_capacity)], &cap, sizeof cap);
  EXPECT_NE(ErrorOf(bad_capacity).find("record capacity 100"), std::string::npos);
}

TEST(RingCorruption, WritePositionBeyondCapacityOnlyReadsTheRing) {
  testing::TempDir tmp;
  std::string bytes = Load(WriteRing(tmp.path()));
  uint64_t pos = ~uint64_t{0} - 5;
  std::memcpy(&bytes[offsetof(FileHeader, write_pos)], &pos, sizeof pos);
  std::string error;
  auto s = ParseRing(bytes.data(), bytes.size(), "x.ring", &error);
  ASSERT_TRUE(s) << error;
  EXPECT_TRUE(s->records.empty());
  EXPECT_EQ(s->torn_records, 64u);  // every slot is stale for such a position
}

TEST(RingCorruption, MissingFileAndNonRingDirectory) {
  std::string error;
  EXPECT_FALSE(ReadRingFile("/nonexistent/x.ring", &error));
  EXPECT_NE(error.find("cannot open"), std::string::npos);
  ListRingFiles("/nonexistent-dir", &error);
  EXPECT_NE(error.find("cannot read directory"), std::string::npos);
}

}  // namespace
}  // namespace ncclscope::trace
