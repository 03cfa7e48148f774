// A gtest fixture that runs scenario jobs through the launcher (`ncclscope sim --no-probe`), each
// test in its own trace directory; shared by the end-to-end tests of the scenario runner.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <sstream>
#include <string>

#include "sim/scenario/launcher.h"

namespace ncclscope::sim {

struct JobResult {
  int rc;
  std::string out;
  std::string err;
  double seconds;
};

class SimJobTest : public ::testing::Test {
 protected:
  void SetUp() override {
#ifndef NCCLSCOPE_SIM_RANK_PROGRAM
    GTEST_SKIP() << "the emulator (ncclsim_nccl) is not built, so neither is the rank program";
#else
    dir_ = std::filesystem::temp_directory_path() /
           ("ncclscope-e2e-" + std::to_string(getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
#endif
  }
  void TearDown() override {
    std::error_code ec;
    if (!dir_.empty()) std::filesystem::remove_all(dir_, ec);
  }

  JobResult run(const std::string& scenario, int ranks, double timeout_s) {
    SimOptions opt;
    opt.ranks = ranks;
    // A bare name is a shipped example; a path, a scenario the test wrote.
    opt.scenario = scenario.find('/') == std::string::npos
                       ? std::string(NCCLSCOPE_SCENARIOS_DIR) + "/" + scenario
                       : scenario;
    opt.trace_dir = dir_.string();
    opt.probe = false;
    opt.timeout_s = timeout_s;
#ifdef NCCLSCOPE_SIM_RANK_PROGRAM
    opt.rank_program = NCCLSCOPE_SIM_RANK_PROGRAM;
#endif
    std::ostringstream out;
    std::ostringstream err;
    const auto t0 = std::chrono::steady_clock::now();
    const int rc = runSim(opt, out, err);
    const std::chrono::duration<double> dt = std::chrono::steady_clock::now() - t0;
    return {rc, out.str(), err.str(), dt.count()};
  }

  std::filesystem::path dir_;
};

}  // namespace ncclscope::sim
