#include <CLI/CLI.hpp>

#include <algorithm>
#include <string>
#include <vector>

#include "tools/commands.h"

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  std::vector<std::string> after_double_dash;
  for (size_t i = 0; i < args.size(); ++i) {
    if (args[i] == "--") {
      after_double_dash.assign(args.begin() + i + 1, args.end());
      args.resize(i);
      break;
    }
  }
  std::reverse(args.begin(), args.end());  // CLI11 takes the arguments last-first
  CLI::App app{"ncclscope: records every NCCL call of a job and tells what went wrong"};
  app.require_subcommand(1);
  int exit_code = 0;
  ncclscope::tools::RegisterRunCommand(app, after_double_dash, &exit_code);
  ncclscope::tools::RegisterDumpCommand(app, &exit_code);
  ncclscope::tools::RegisterSimCommand(app, &exit_code);
  try {
    app.parse(args);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 3;
  }
  return exit_code;
}
