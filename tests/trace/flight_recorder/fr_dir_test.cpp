// Which files of a directory ListFrDumps takes for Flight Recorder dumps: a trace directory holds
// ncclscope's own JSON (the watchdog's verdict.json) beside the rings, and `analyze DIR` must not
// report it as a dump it could not use.
#include "trace/flight_recorder/fr_dir.h"

#include <gtest/gtest.h>

#include <fstream>
#include <string>

#include "../temp_dir.h"

namespace ncclscope::flight_recorder {
namespace {

void Write(const std::string& path, const std::string& text) {
  std::ofstream(path) << text;
}

TEST(FrDir, TheWatchdogsVerdictIsNotADumpButARanklessJsonIsNamed) {
  ncclscope::testing::TempDir dir;
  Write(dir.path() + "/verdict.json", "{\n  \"usable\": true,\n  \"verdicts\": []\n}\n");
  Write(dir.path() + "/dump.json", "{\"version\": \"2.4\", \"entries\": []}");
  Write(dir.path() + "/nccl_trace_rank_3.json", "{\"version\": \"2.4\", \"entries\": []}");
  FrDumpListing listing;
  std::string error;
  ASSERT_TRUE(ListFrDumps(dir.path(), &listing, &error)) << error;
  ASSERT_EQ(listing.dumps.size(), 1u);
  EXPECT_EQ(listing.dumps[0].rank, 3);
  ASSERT_EQ(listing.skipped.size(), 1u);
  EXPECT_NE(listing.skipped[0].find("dump.json"), std::string::npos) << listing.skipped[0];
}

}  // namespace
}  // namespace ncclscope::flight_recorder
