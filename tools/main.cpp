#include <CLI/CLI.hpp>

#include <algorithm>
#include <exception>
#include <iostream>
#include <string>
#include <vector>

#include "tools/commands.h"

namespace {

std::string CommandNames(const CLI::App& app) {
  std::string names;
  for (const CLI::App* sub : app.get_subcommands({})) {
    names += (names.empty() ? "" : ", ") + sub->get_name();
  }
  return names;
}

// CLI11 answers a missing or misspelt command with "A subcommand is required"; a user needs to
// know which word was wrong and what the choices are. Returns false after saying so.
bool CheckCommandWord(const CLI::App& app, const std::vector<std::string>& args_in_order) {
  if (args_in_order.empty()) {
    std::cerr << "ncclscope: a command is required: " << CommandNames(app)
              << " (ncclscope --help)\n";
    return false;
  }
  const std::string& word = args_in_order.front();
  if (word == "-h" || word == "--help") return true;  // the only options before the command
  for (const CLI::App* sub : app.get_subcommands({})) {
    if (sub->get_name() == word) return true;
  }
  std::cerr << "ncclscope: unknown " << (!word.empty() && word[0] == '-' ? "option" : "command")
            << " '" << word << "'; the commands are " << CommandNames(app)
            << " (ncclscope --help)\n";
  return false;
}

int Main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  std::vector<std::string> after_double_dash;
  const auto dash = std::find(args.begin(), args.end(), "--");
  if (dash != args.end()) {
    after_double_dash.assign(dash + 1, args.end());
    args.erase(dash, args.end());
  }

  CLI::App app{"ncclscope: records every NCCL call of a job and tells what went wrong",
               "ncclscope"};
  app.require_subcommand(1);
  int exit_code = 0;
  ncclscope::tools::RegisterRunCommand(app, after_double_dash, &exit_code);
  ncclscope::tools::RegisterDumpCommand(app, &exit_code);
  ncclscope::tools::RegisterSimCommand(app, &exit_code);
  ncclscope::tools::RegisterAnalyzeCommand(app, &exit_code);
  ncclscope::tools::RegisterExporterCommand(app, &exit_code);
  ncclscope::tools::RegisterDigestCommand(app, &exit_code);
  ncclscope::tools::RegisterAccelPlanCommand(app, &exit_code);
  ncclscope::tools::RegisterStatsCommand(app, &exit_code);
  ncclscope::tools::RegisterTimelineCommand(app, &exit_code);
  ncclscope::tools::RegisterReportCommand(app, &exit_code);
  ncclscope::tools::RegisterFrExportCommand(app, &exit_code);
  if (!CheckCommandWord(app, args)) return 3;
  std::reverse(args.begin(), args.end());  // CLI11 takes the arguments last-first
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
