// Same verdicts from Flight Recorder dumps as from ring files: each fault of sim/scenarios run as
// 8 emulated ranks, its ring files turned into FR dumps (`ncclscope fr-export`, the documented
// format), and both directories analysed post mortem. Where FR records what the verdict rests on
// (docs/flight-recorder.md, "What a dump cannot tell"), the headline (class, communicator,
// sequence number, culprits) must be the ring files'; where it does not, the FR verdict must not
// blame a rank the ring files clear.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "tests/e2e/cli.h"
#include "tests/e2e/e2e_env.h"
#include "tests/e2e/headline.h"
#include "tests/e2e/scratch_dir.h"

namespace ncclscope::testing {
namespace {

namespace fs = std::filesystem;

constexpr int kCatalogueRanks = 8;

nlohmann::json AnalyzeFrArgs(const std::vector<std::string>& args) {
  std::vector<std::string> argv = {Cli(), "analyze", "--json"};
  argv.insert(argv.end(), args.begin(), args.end());
  const ProcessResult r = RunProcess(argv, {}, 60);
  EXPECT_NE(r.exit_code, 3) << r.err;
  nlohmann::json j = nlohmann::json::parse(r.out, nullptr, false);
  EXPECT_FALSE(j.is_discarded()) << "analyze printed no JSON\n" << r.out << r.err;
  return j;
}

struct Case {
  const char* scenario;
  // What FR cannot see of this fault: empty when the FR headline must equal the ring files'.
  const char* degraded = "";
  // Ranks whose process died: they write no dump (torch dumps from a live process), so their
  // dump is removed before the analysis.
  std::vector<int> no_dump = {};
  // The dump format version fr-export writes (the default is the newest, 2.10).
  const char* version = "2.10";
};

class FrCatalogue : public ::testing::TestWithParam<Case> {};

TEST_P(FrCatalogue, DumpsGiveTheRingFilesVerdictWithinWhatFrRecords) {
  const Case& c = GetParam();
  ScratchDir scratch;
  const std::string rings = scratch / "rings";
  const ProcessResult sim = RunSim(std::string(c.scenario) + ".json", kCatalogueRanks, rings,
                                   kKillAfterS, {{"NCCLSCOPE_RING_RECORDS", "4096"}});
  ASSERT_NE(sim.exit_code, 127) << sim.err;
  const std::string dumps = scratch / "dumps";
  const ProcessResult exported =
      RunProcess({Cli(), "fr-export", rings, "-o", dumps, "--version", c.version}, {}, 60);
  ASSERT_EQ(exported.exit_code, 0) << exported.err;
  for (const int r : c.no_dump)
    fs::remove(fs::path(dumps) / ("nccl_trace_rank_" + std::to_string(r)));

  const Headline ring = HeadlineOf(AnalyzeFrArgs({"--job-ended", "--no-process-checks", rings}));
  const Headline fr = HeadlineOf(AnalyzeFrArgs({dumps}));
  ASSERT_FALSE(ring.cls.empty());
  if (std::string(c.degraded).empty()) {
    EXPECT_EQ(fr, ring);
    return;
  }
  SCOPED_TRACE(std::string("degraded: ") + c.degraded + "; ring files: " +
               ::testing::PrintToString(ring) + ", dumps: " + ::testing::PrintToString(fr));
  // Less seen, never a wrong place: either every rank the dumps blame the ring files blame too
  // (or its dump is missing), or the dumps see an unlocalised device stall of the very collective
  // the ring files blame, among whose members the ring files' culprits are.
  auto contains = [](const std::vector<int>& v, int r) {
    return std::find(v.begin(), v.end(), r) != v.end();
  };
  if (fr.cls == "device-stall") {
    EXPECT_EQ(fr.comm, ring.comm);
    EXPECT_EQ(fr.seq, ring.seq);
    for (const int r : ring.culprits) EXPECT_TRUE(contains(fr.culprits, r)) << "rank " << r;
    return;
  }
  for (const int r : fr.culprits) {
    EXPECT_TRUE(contains(ring.culprits, r) || contains(c.no_dump, r))
        << "the dumps blame rank " << r;
  }
}

INSTANTIATE_TEST_SUITE_P(
    Catalogue, FrCatalogue,
    ::testing::Values(
        Case{"healthy"}, Case{"hang"}, Case{"skip"}, Case{"extra-op"}, Case{"wrong-count"},
        Case{"wrong-dtype"}, Case{"wrong-op"}, Case{"wrong-peer"}, Case{"p2p-cycle"},
        Case{"pipeline-chain"}, Case{"desync-and-missing"},
        // Older dump formats: 2.2 (the oldest read: no dtypes, no pg_status), 2.4 (no thread keys).
        Case{"hang", "", {}, "2.2"}, Case{"p2p-cycle", "", {}, "2.4"},
        Case{"wrong-dtype", "", {}, "2.4"},
        Case{"never-join", "FR records no communicator creation"},
        Case{"wrong-redop", "FR records no reduction op"}, Case{"wrong-root", "FR records no root"},
        Case{"crash-sigkill", "no process information; the dead rank wrote no dump", {1}}),
    [](const auto& info) {
      std::string name = info.param.scenario;
      if (std::string(info.param.version) != "2.10") name += std::string("_v") + info.param.version;
      for (char& ch : name) {
        if (ch == '-' || ch == '.') ch = '_';
      }
      return name;
    });

}  // namespace
}  // namespace ncclscope::testing
