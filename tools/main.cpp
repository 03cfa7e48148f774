#include <CLI/CLI.hpp>

#include <algorithm>
#include <exception>
#include <iostream>
#include <string>
#include <vector>

#include "tools/commands.h"

namespace {

int Main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  std::vector<std::string> after_double_dash;
  const auto dash = std::find(args.begin(), args.end(), "--");
  if (dash != args.end()) {
    after_double_dash.assign(dash + 1, args.end());
    args.erase(dash, args.end());
  }
  std::reverse(args.begin(), args.end());  // CLI11 takes the arguments last-first

  CLI::App app{"ncclscope: records every NCCL call of a job and tells what went wrong"};
  app.require_subcommand(1);
  int exit_code = 0;
  ncclscope::tools::RegisterRunCommand(app, after_double_dash, &exit_code);
  ncclscope::tools::RegisterDumpCommand(app, &exit_code);
  ncclscope::tools::RegisterSimCommand(app, &exit_code);
  ncclscope::tools::RegisterAnalyzeCommand(app, &exit_code);
  ncclscope::tools::RegisterExporterCommand(app, &exit_code);
  try {
    app.parse(args);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 3;
  }
  return exit_code;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return Main(argc, argv);
  } catch (const std::exception& e) {
    // A failure no command reported itself (out of memory, say): say what it was, exit 3.
    std::cerr << "ncclscope: " << e.what() << "\n";
  } catch (...) {
    std::cerr << "ncclscope: unexpected error\n";
  }
  return 3;
}
