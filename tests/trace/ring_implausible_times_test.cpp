// Times no clock gives (negative, or beyond decades of uptime) are damage: a header holding them is
// rejected, a record holding them is skipped and counted as torn, so no reader ever sums or
// subtracts them (which would overflow).
#include <gtest/gtest.h>

#include <climits>
#include <fstream>
#include <iterator>
#include <optional>
#include <string>

#include "tests/trace/temp_dir.h"
#include "trace/ring_layout.h"
#include "trace/ring_reader.h"
#include "trace/ring_writer.h"

namespace ncclscope::trace {
namespace {

std::string RingWith(const std::string& dir, const std::vector<int64_t>& enter_times) {
  RingOptions o;
  o.dir = dir;
  o.record_capacity = 64;
  std::string error;
  auto w = RingWriter::Create(o, &error);
  EXPECT_TRUE(w) << error;
  if (!w) return "";
  for (const int64_t t : enter_times) {
    RecordData r{};
    r.op = static_cast<uint32_t>(OpType::kAllReduce);
    r.t_enter_ns = t;
    r.t_exit_ns = t < 0 ? 0 : t + 1;
    w->Append(r, false);
  }
  std::ifstream in(w->path(), std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

TEST(RingImplausibleTimes, HeaderClockOutOfRangeIsRejected) {
  testing::TempDir tmp;
  for (const int64_t bad : {int64_t{-1}, INT64_MAX}) {
    std::string bytes = RingWith(tmp.path(), {100});
    auto& h = *reinterpret_cast<FileHeader*>(bytes.data());
    h.start_monotonic_ns = bad;
    std::string error;
    EXPECT_FALSE(ParseRing(bytes.data(), bytes.size(), "x.ring", &error)) << bad;
    EXPECT_EQ(error, "x.ring: corrupt header: clock readings out of range");
  }
}

TEST(RingImplausibleTimes, RecordOutOfRangeIsSkippedAsTorn) {
  testing::TempDir tmp;
  const std::string bytes = RingWith(tmp.path(), {100, INT64_MAX - 5, -7, 200});
  std::string error;
  const std::optional<RingSnapshot> s = ParseRing(bytes.data(), bytes.size(), "x.ring", &error);
  ASSERT_TRUE(s) << error;
  ASSERT_EQ(s->records.size(), 2u);
  EXPECT_EQ(s->records[0].data.t_enter_ns, 100);
  EXPECT_EQ(s->records[1].data.t_enter_ns, 200);
  EXPECT_EQ(s->torn_records, 2u);
}

}  // namespace
}  // namespace ncclscope::trace
