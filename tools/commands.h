// Subcommands of the ncclscope CLI. Each Register* adds one verb to the app; the callback it
// installs stores the verb's exit code in *exit_code. Not thread-safe (CLI setup runs once on the
// main thread).
#pragma once

#include <CLI/CLI.hpp>

#include <string>
#include <vector>

namespace ncclscope::tools {

// Every command's exit status for input it cannot use (a missing directory, a hostile file).
inline constexpr int kUnusableInput = 3;

// after_double_dash: the words after the first "--" of the command line, which main keeps away from
// CLI11 so that a command's own options are never parsed as ours.
void RegisterRunCommand(CLI::App& app, const std::vector<std::string>& after_double_dash,
                        int* exit_code);
void RegisterDumpCommand(CLI::App& app, int* exit_code);
void RegisterSimCommand(CLI::App& app, int* exit_code);
void RegisterAnalyzeCommand(CLI::App& app, int* exit_code);
void RegisterExporterCommand(CLI::App& app, int* exit_code);
void RegisterDigestCommand(CLI::App& app, int* exit_code);
void RegisterAccelPlanCommand(CLI::App& app, int* exit_code);
void RegisterStatsCommand(CLI::App& app, int* exit_code);
void RegisterTimelineCommand(CLI::App& app, int* exit_code);
void RegisterReportCommand(CLI::App& app, int* exit_code);
void RegisterFrExportCommand(CLI::App& app, int* exit_code);

// Directory of the running ncclscope executable (build/bin), to find ../lib/libncclscope.so.
std::string ExecutableDir();

}  // namespace ncclscope::tools
