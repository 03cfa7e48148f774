// `ncclscope report` on a real emulated job that lost a rank, opened in a real headless browser
// (Debian's chromium): the page loads without console errors, the verdict's headline and the cost
// table are in its DOM, each communicator of a split named by its members, and a screenshot is kept
// as an artifact of the test run (build/test-artifacts/report.png). Without chromium the browser
// part is skipped, saying so; scripts/install-deps.sh installs it, so CI always runs it.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "tests/e2e/cli.h"
#include "tests/e2e/e2e_env.h"
#include "tests/e2e/scratch_dir.h"
#include "tests/e2e/subprocess.h"

namespace ncclscope::testing {
namespace {

std::string Chromium() {
  for (const char* path : {"/usr/bin/chromium", "/usr/bin/chromium-browser"}) {
    if (std::filesystem::exists(path)) return path;
  }
  return "";
}

// What headless chromium makes of the page: `--dump-dom` prints the DOM after loading it.
ProcessResult Browse(const std::string& chromium, const std::string& profile,
                     const std::vector<std::string>& what, const std::string& page) {
  std::vector<std::string> argv = {chromium,
                                   "--headless",
                                   "--no-sandbox",  // tests run as root in containers
                                   "--disable-gpu",
                                   "--no-first-run",
                                   "--user-data-dir=" + profile,
                                   "--enable-logging=stderr",
                                   "--v=0",
                                   "--window-size=1300,1800"};
  argv.insert(argv.end(), what.begin(), what.end());
  argv.push_back("file://" + page);
  return RunProcess(argv, {}, 90);
}

TEST(CliReport, ThePageOfAJobThatLostARankLoadsInABrowserAndNamesTheVerdict) {
  ScratchDir dir;
  // The survivors wait for the killed rank until the 8 s timeout ends the job.
  const ProcessResult job = RunSim("crash-sigkill.json", 4, dir / "trace", 8);
  ASSERT_NE(job.exit_code, 0) << "the scenario kills a rank";
  const ProcessResult analyze = RunProcess({Cli(), "analyze", dir / "trace"}, {}, 60);
  const std::string headline = analyze.out.substr(0, analyze.out.find('\n'));
  ASSERT_FALSE(headline.empty()) << analyze.err;

  const std::string page = dir / "report.html";
  const ProcessResult report = RunProcess({Cli(), "report", dir / "trace", "-o", page}, {}, 60);
  ASSERT_EQ(report.exit_code, 0) << report.err;
  std::ifstream in(page);
  std::stringstream html;
  html << in.rdbuf();
  ASSERT_NE(html.str().find("<h2 id=\"verdicts\">"), std::string::npos);
  // The scenario's tp of ranks 0,1 and of 2,3 both ran their first allreduce before the kill:
  // two cost rows, each naming its communicator by its members, and every communicator that
  // waits is named so too.
  const std::string text = html.str();
  const size_t stats = text.find("<h2 id=\"stats\">");
  const size_t progress = text.find("<h2 id=\"progress\">");
  const size_t facts = text.find("<h2 id=\"job\">");
  ASSERT_TRUE(stats < progress && progress < facts);
  EXPECT_NE(text.find("<td>tp (ranks 0,1)</td><td>allreduce</td>", stats), std::string::npos);
  EXPECT_NE(text.find("<td>tp (ranks 2,3)</td><td>allreduce</td>", stats), std::string::npos);
  size_t waiting = 0;
  for (size_t at = text.find("<tr><td>", progress); at < facts;
       at = text.find("<tr><td>", at + 1), ++waiting) {
    const std::string cell = text.substr(at, text.find("</td>", at) - at);
    EXPECT_NE(cell.find(" (ranks "), std::string::npos) << cell;
  }
  EXPECT_GT(waiting, 0u) << "the survivors wait for the killed rank";

  const std::string chromium = Chromium();
  if (chromium.empty()) GTEST_SKIP() << "chromium is not installed (scripts/install-deps.sh)";
  const ProcessResult dom = Browse(chromium, dir / "profile", {"--dump-dom"}, page);
  ASSERT_EQ(dom.exit_code, 0) << dom.err;
  // The DOM holds the verdict as `ncclscope analyze` words it (escaped as HTML text is) and the
  // tables; the browser reported no console message about the page.
  EXPECT_NE(dom.out.find("What each collective cost"), std::string::npos);
  EXPECT_NE(dom.out.find("<svg"), std::string::npos);
  std::string escaped;
  for (char c : headline) {
    if (c == '&')
      escaped += "&amp;";
    else if (c == '<')
      escaped += "&lt;";
    else if (c == '>')
      escaped += "&gt;";
    else
      escaped += c;
  }
  EXPECT_NE(dom.out.find(escaped.substr(0, 60)), std::string::npos) << headline;
  EXPECT_EQ(dom.err.find("CONSOLE("), std::string::npos) << dom.err;

  const std::filesystem::path artifacts = NCCLSCOPE_TEST_ARTIFACT_DIR;
  std::filesystem::create_directories(artifacts);
  const std::string shot = (artifacts / "report.png").string();
  std::filesystem::remove(shot);
  const ProcessResult screenshot =
      Browse(chromium, dir / "profile", {"--screenshot=" + shot}, page);
  ASSERT_EQ(screenshot.exit_code, 0) << screenshot.err;
  ASSERT_TRUE(std::filesystem::exists(shot));
  EXPECT_GT(std::filesystem::file_size(shot), 10000u);  // a page, not a blank image
}

TEST(CliReport, UnusableInputExits3NamingIt) {
  ScratchDir dir;
  const ProcessResult missing =
      RunProcess({Cli(), "report", dir / "nowhere", "-o", dir / "r.html"}, {}, 60);
  EXPECT_EQ(missing.exit_code, kUnusableInput);
  EXPECT_NE(missing.err.find("not a readable directory"), std::string::npos) << missing.err;
  std::filesystem::create_directory(dir / "empty");
  const ProcessResult empty =
      RunProcess({Cli(), "report", dir / "empty", "-o", dir / "r.html"}, {}, 60);
  EXPECT_EQ(empty.exit_code, kUnusableInput);
  EXPECT_FALSE(std::filesystem::exists(dir / "r.html"));
}

}  // namespace
}  // namespace ncclscope::testing
