// The ncclscope command's own messages: a mistyped command or a missing argument says what was
// wrong and what the choices are, exits 3 (unusable input), and --help tells the truth about
// names, requirements and defaults.
#include <gtest/gtest.h>

#include <regex>
#include <sstream>
#include <string>

#include "tests/e2e/cli.h"
#include "tests/e2e/e2e_env.h"
#include "tests/e2e/scratch_dir.h"
#include "tests/e2e/subprocess.h"

namespace ncclscope::testing {
namespace {

constexpr const char* kCommands[] = {"run",      "dump",   "sim",       "analyze",
                                     "exporter", "digest", "accel-plan"};

// The help line of one option ("  --stall-after FLOAT:POSITIVE=2"); empty when absent.
std::string HelpLine(const std::string& help, const std::string& option) {
  std::istringstream in(help);
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("  " + option + " ", 0) == 0) return line;
  }
  return "";
}

void ExpectListsEveryCommand(const std::string& text) {
  for (const char* command : kCommands) {
    EXPECT_NE(text.find(command), std::string::npos) << "lists '" << command << "'\n" << text;
  }
}

TEST(CliUsage, UnknownCommandIsNamedWithTheChoices) {
  const ProcessResult p = RunProcess({Cli(), "bogus"}, {}, 30);
  EXPECT_EQ(p.exit_code, kUnusableInput) << p.err;
  EXPECT_NE(p.err.find("unknown command 'bogus'"), std::string::npos) << p.err;
  EXPECT_EQ(p.err.find("A subcommand is required"), std::string::npos) << p.err;
  ExpectListsEveryCommand(p.err);
  EXPECT_TRUE(p.out.empty()) << p.out;
}

TEST(CliUsage, UnknownOptionBeforeTheCommandIsNamed) {
  const ProcessResult p = RunProcess({Cli(), "--bogus", "analyze", "/nonexistent"}, {}, 30);
  EXPECT_EQ(p.exit_code, kUnusableInput) << p.err;
  EXPECT_NE(p.err.find("unknown option '--bogus'"), std::string::npos) << p.err;
  ExpectListsEveryCommand(p.err);
}

TEST(CliUsage, NoCommandListsTheChoices) {
  const ProcessResult p = RunProcess({Cli()}, {}, 30);
  EXPECT_EQ(p.exit_code, kUnusableInput) << p.err;
  EXPECT_NE(p.err.find("a command is required"), std::string::npos) << p.err;
  ExpectListsEveryCommand(p.err);
}

TEST(CliUsage, HelpNamesTheProgram) {
  const ProcessResult top = RunProcess({Cli(), "--help"}, {}, 30);
  EXPECT_EQ(top.exit_code, 0) << top.err;
  EXPECT_NE(top.out.find("Usage: ncclscope [OPTIONS] SUBCOMMAND"), std::string::npos) << top.out;
  ExpectListsEveryCommand(top.out);
  const ProcessResult sub = RunProcess({Cli(), "dump", "--help"}, {}, 30);
  EXPECT_EQ(sub.exit_code, 0) << sub.err;
  EXPECT_NE(sub.out.find("Usage: ncclscope dump [OPTIONS] dir"), std::string::npos) << sub.out;
}

TEST(CliUsage, AnalyzeHelpShowsItsDefaults) {
  const ProcessResult p = RunProcess({Cli(), "analyze", "--help"}, {}, 30);
  ASSERT_EQ(p.exit_code, 0) << p.err;
  // CLI11 prints a default as "=VALUE" after the option's type.
  const std::regex stall(R"(--stall-after \S+=2(\s|$))"), stale(R"(--stale-after \S+=2(\s|$))"),
      threads(R"(--read-threads .*\]=2(\s|$))"), interval(R"(--interval \S+=1(\s|$))");
  EXPECT_TRUE(std::regex_search(HelpLine(p.out, "--stall-after"), stall)) << p.out;
  EXPECT_TRUE(std::regex_search(HelpLine(p.out, "--stale-after"), stale)) << p.out;
  EXPECT_TRUE(std::regex_search(HelpLine(p.out, "--read-threads"), threads)) << p.out;
  EXPECT_TRUE(std::regex_search(HelpLine(p.out, "--interval"), interval)) << p.out;
}

TEST(CliUsage, ExporterHelpSaysDirFallsBackToTheEnvironment) {
  // Without NCCLSCOPE_DIR, --dir used to read "REQUIRED" and "(default: $NCCLSCOPE_DIR)" at once.
  const ProcessResult p =
      RunProcess({"env", "-u", "NCCLSCOPE_DIR", Cli(), "exporter", "--help"}, {}, 30);
  ASSERT_EQ(p.exit_code, 0) << p.err;
  const std::string dir = HelpLine(p.out, "--dir");
  ASSERT_FALSE(dir.empty()) << p.out;
  EXPECT_EQ(dir.find("REQUIRED"), std::string::npos) << dir;
  EXPECT_NE(dir.find("$NCCLSCOPE_DIR"), std::string::npos) << dir;
  EXPECT_NE(p.out.find("Usage: ncclscope exporter"), std::string::npos) << p.out;
}

TEST(CliUsage, ExporterWithoutAnyDirectoryExits3AtOnce) {
  const ProcessResult p = RunProcess(
      {"env", "-u", "NCCLSCOPE_DIR", Cli(), "exporter", "--listen", "127.0.0.1:0"}, {}, 30);
  EXPECT_FALSE(p.timed_out) << "served instead of refusing";
  EXPECT_EQ(p.exit_code, kUnusableInput) << p.err;
  EXPECT_NE(p.err.find("--dir"), std::string::npos) << p.err;
  EXPECT_NE(p.err.find("NCCLSCOPE_DIR"), std::string::npos) << p.err;
}

// healthy.json reduces with ncclRedOpCreatePreMulSum: the op's number is NCCL's, per communicator.
TEST(CliUsage, DumpTellsWhereARuntimeReductionNumberComesFrom) {
  ScratchDir scratch;
  const std::string dir = scratch / "trace";
  const ProcessResult sim = RunSim("healthy.json", 4, dir, 30);
  ASSERT_EQ(sim.exit_code, 0) << sim.err;
  const ProcessResult text = RunProcess({Cli(), "dump", dir}, {}, 60);
  ASSERT_EQ(text.exit_code, 0) << text.err;
  // Searched, not matched with std::regex: a dump is megabytes.
  const std::string explained = "redop=premulsum (ncclRedOpCreatePreMulSum #";
  const size_t at = text.out.find(explained);
  ASSERT_NE(at, std::string::npos) << text.out.substr(0, 4000);
  const size_t number = at + explained.size();
  const size_t close = text.out.find_first_not_of("0123456789", number);
  EXPECT_GT(close, number) << text.out.substr(at, 80);
  EXPECT_EQ(text.out.substr(close, 1), ")") << text.out.substr(at, 80);
  for (char digit = '0'; digit <= '9'; ++digit) {
    EXPECT_EQ(text.out.find(std::string("redop=premulsum") + digit), std::string::npos);
  }
  // The JSON field stays one token that scripts compare.
  const ProcessResult json = RunProcess({Cli(), "dump", dir, "--json"}, {}, 60);
  ASSERT_EQ(json.exit_code, 0) << json.err;
  const size_t field = json.out.find("\"redop\":\"premulsum");
  ASSERT_NE(field, std::string::npos) << json.out.substr(0, 4000);
  const size_t digits = field + std::string("\"redop\":\"premulsum").size();
  EXPECT_GT(json.out.find_first_not_of("0123456789", digits), digits) << json.out.substr(field, 40);
}

}  // namespace
}  // namespace ncclscope::testing
