// `ncclscope sim --ranks N --scenario FILE [--dir D] [--nodes N] [--no-probe] [--timeout S]`.
#include <iostream>
#include <memory>

#include "sim/scenario/launcher.h"
#include "tools/commands.h"

namespace ncclscope::tools {

void RegisterSimCommand(CLI::App& app, int* exit_code) {
  auto* cmd = app.add_subcommand("sim", "Run an N-rank job on the CPU emulator, faults included");
  auto options = std::make_shared<sim::SimOptions>();
  auto no_probe = std::make_shared<bool>(false);
  cmd->add_option("--ranks", options->ranks, "Number of ranks (processes)")->required();
  cmd->add_option("--scenario", options->scenario, "Scenario file (docs/scenarios.md)")->required();
  cmd->add_option("--dir", options->trace_dir,
                  "Trace directory (default: a new one under $TMPDIR)");
  cmd->add_option("--nodes", options->nodes,
                  "Split the ranks into N simulated nodes (equal contiguous blocks), each with "
                  "its own host name (node0, ...) and trace directory <dir>/<job>/<host>; the job "
                  "is $NCCLSCOPE_JOB_ID when set, else sim-<tag>, new for each run")
      ->check(CLI::PositiveNumber);
  cmd->add_flag("--no-probe", *no_probe, "Run without libncclscope.so preloaded");
  cmd->add_option("--timeout", options->timeout_s,
                  "Seconds before a job that has not finished is killed and reported as hung "
                  "(default: wait forever)");
  cmd->add_flag(
      "--fail-fast", options->fail_fast,
      "Kill the other ranks as soon as one fails, as an elastic launcher (torchrun) does");
  cmd->callback([=] {
    options->probe = !*no_probe;
    const int rc = sim::runSim(*options, std::cout, std::cerr);
    // The CLI's convention: 3 means the input (here the scenario or the setup) is unusable.
    *exit_code = rc == sim::kSimSetupError ? 3 : rc;
  });
}

}  // namespace ncclscope::tools
