// A hang's verdict names the training step and phase of the culprit and of its victims, end to
// end: `ncclscope sim` injects the probe through NVTX_INJECTION64_PATH, the scenario runner
// opens "step N" > <the step's name> > compute / collectives (sim/scenario/rank_runner.cpp), and
// `ncclscope analyze` reads the contexts back from the rings.
//
// stuck-before.json: rank 2's host thread blocks before the first operation of step 3 (named
// "backward"), after step 3's compute. Its last call was therefore made in step 2 ("forward"),
// while every other rank goes on into step 3 and waits there: the culprit is last seen in a step
// and phase its victims have left, whatever the machine's load.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <string>

#include "tests/e2e/cli.h"
#include "tests/e2e/e2e_env.h"
#include "tests/e2e/scratch_dir.h"

namespace ncclscope::testing {
namespace {

const nlohmann::json* PlaceOf(const nlohmann::json& v, const std::string& role) {
  if (!v.contains("where")) return nullptr;
  for (const auto& p : v["where"]) {
    if (p["role"] == role) return &p;
  }
  return nullptr;
}

TEST(NvtxVerdict, HangNamesTheCulpritsAndTheVictimsStepAndPhase) {
  ScratchDir dir;
  const ProcessResult sim = RunSim("stuck-before.json", 4, dir / "trace", kKillAfterS);
  EXPECT_NE(sim.exit_code, 0) << "a job with a stuck rank cannot finish";
  const ProcessResult j = RunProcess({Cli(), "analyze", dir / "trace", "--json"}, {}, 120);
  const nlohmann::json json = nlohmann::json::parse(j.out, nullptr, false);
  ASSERT_FALSE(json.is_discarded()) << j.out << j.err;
  SCOPED_TRACE(json.dump(2));
  EXPECT_EQ(j.exit_code, 2);
  ASSERT_FALSE(json["verdicts"].empty());
  const nlohmann::json& v = json["verdicts"][0];
  EXPECT_EQ(v["culprits"], nlohmann::json::array({2}));

  const nlohmann::json* culprit = PlaceOf(v, "culprit");
  ASSERT_NE(culprit, nullptr);
  EXPECT_EQ((*culprit)["ranks"], nlohmann::json::array({2}));
  EXPECT_EQ((*culprit)["step"], 2);
  EXPECT_EQ((*culprit)["phase"], "forward");
  EXPECT_EQ((*culprit)["range"], "collectives");
  EXPECT_EQ((*culprit)["basis"].get<std::string>().rfind("its newest call, ", 0), 0u);

  const nlohmann::json* victims = PlaceOf(v, "victim");
  ASSERT_NE(victims, nullptr);
  EXPECT_EQ((*victims)["step"], 3);
  EXPECT_EQ((*victims)["phase"], "backward");
  EXPECT_EQ((*victims)["range"], "collectives");
  EXPECT_NE((*victims)["basis"].get<std::string>().find("waiting in "), std::string::npos);

  const ProcessResult t = RunProcess({Cli(), "analyze", dir / "trace"}, {}, 120);
  EXPECT_EQ(t.exit_code, 2);
  EXPECT_NE(t.out.find(v["headline"].get<std::string>()), std::string::npos) << t.out;
  EXPECT_NE(t.out.find("[culprit in step 2, forward; victims in step 3, backward]"),
            std::string::npos)
      << t.out;
  EXPECT_NE(t.out.find("  where: culprit rank 2 in step 2, forward (innermost: collectives) (its "
                       "newest call, "),
            std::string::npos)
      << t.out;
}

}  // namespace
}  // namespace ncclscope::testing
