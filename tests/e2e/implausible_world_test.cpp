// A ring header that claims a world of two million or 2^31-1 ranks (a corrupt header, a launcher's
// typo): `ncclscope analyze --json` stays within bounded memory and writes a small document, with
// the claim ignored rather than two billion ranks listed as missing.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <climits>
#include <string>

#include "tests/e2e/e2e_env.h"
#include "tests/e2e/scratch_dir.h"
#include "tests/e2e/subprocess.h"
#include "tests/e2e/synthetic_ring.h"

namespace ncclscope::testing {
namespace {

// analyze under an address-space limit far below what per-rank state for 2^31 ranks needs (8 GiB
// for the list of missing ranks alone): such an allocation fails and the process aborts.
ProcessResult AnalyzeWithin2GiB(const std::string& dir) {
  return RunProcess({"/bin/sh", "-c", "ulimit -v 2097152 && exec \"$0\" \"$@\"", Cli(), "analyze",
                     dir, "--json", "--no-process-checks"},
                    {}, 60);
}

TEST(ImplausibleWorldSize, IsIgnoredInBoundedMemoryWithASmallVerdict) {
  for (const int claimed : {2000000, INT_MAX}) {
    SCOPED_TRACE(claimed);
    ScratchDir scratch;
    ASSERT_FALSE(WriteSyntheticRing(scratch.path(), 0, claimed).empty());
    ASSERT_FALSE(WriteSyntheticRing(scratch.path(), 1, claimed).empty());
    const ProcessResult p = AnalyzeWithin2GiB(scratch.path());
    ASSERT_FALSE(p.timed_out);
    EXPECT_EQ(p.exit_code, 0) << p.err;
    EXPECT_LT(p.out.size(), 16384u);
    const auto doc = nlohmann::json::parse(p.out, nullptr, false);
    ASSERT_FALSE(doc.is_discarded()) << p.out.substr(0, 2000);
    EXPECT_EQ(doc["input"]["files"], 2);
    EXPECT_EQ(doc["input"]["world_size"], -1);
    EXPECT_EQ(doc["input"]["missing_rank_count"], 0);
    EXPECT_NE(doc["input"]["notes"].dump().find("2 file(s) claim an implausible world size (" +
                                                std::to_string(claimed)),
              std::string::npos)
        << doc["input"]["notes"].dump();
    EXPECT_NE(doc["input"]["notes"].dump().find("not all ranks were seen"), std::string::npos);
  }
}

// A large world that could be real: the ranks without a file are counted and listed as ranges.
TEST(ImplausibleWorldSize, APlausibleLargeWorldListsItsMissingRanksAsRanges) {
  ScratchDir scratch;
  ASSERT_FALSE(WriteSyntheticRing(scratch.path(), 0, 1000000).empty());
  ASSERT_FALSE(WriteSyntheticRing(scratch.path(), 5, 1000000).empty());
  const ProcessResult p = AnalyzeWithin2GiB(scratch.path());
  ASSERT_FALSE(p.timed_out);
  EXPECT_LT(p.out.size(), 16384u);
  const auto doc = nlohmann::json::parse(p.out, nullptr, false);
  ASSERT_FALSE(doc.is_discarded()) << p.out.substr(0, 2000);
  EXPECT_EQ(doc["input"]["world_size"], 1000000);
  EXPECT_EQ(doc["input"]["missing_rank_count"], 999998);
  EXPECT_EQ(doc["input"]["missing_rank_ranges"], nlohmann::json::parse("[[1,4],[6,999999]]"));
}

}  // namespace
}  // namespace ncclscope::testing
