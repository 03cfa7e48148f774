// `ncclscope dump` on damaged or missing input: it says which file is bad, still prints the good
// ones, and exits 3 so scripts notice.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "tests/e2e/cli.h"
#include "tests/e2e/e2e_env.h"
#include "tests/e2e/scratch_dir.h"

namespace ncclscope::testing {
namespace {

namespace fs = std::filesystem;

std::vector<std::string> RingFiles(const std::string& dir) {
  std::vector<std::string> files;
  for (const auto& e : fs::directory_iterator(dir)) {
    if (e.path().extension() == ".ring") files.push_back(e.path().string());
  }
  std::sort(files.begin(), files.end());
  return files;
}

TEST(DumpOfDamagedDir, NamesTheBadFilesPrintsTheRestAndExits3) {
  ScratchDir scratch;
  const std::string dir = scratch / "trace";
  const ProcessResult sim = RunSim("healthy.json", 4, dir, 30);
  ASSERT_EQ(sim.exit_code, 0) << sim.err;
  const std::vector<std::string> rings = RingFiles(dir);
  ASSERT_EQ(rings.size(), 4u);
  // A ring cut short (a copy interrupted, a disk full while copying) and a file that never was one.
  fs::resize_file(rings[0], 6000);
  const std::string garbage = dir + "/garbage.ring";
  std::ofstream(garbage) << std::string(9000, 'x');

  const ProcessResult p = RunProcess({Cli(), "dump", dir}, {}, 60);
  EXPECT_EQ(p.exit_code, kUnusableInput) << p.err;
  EXPECT_NE(p.err.find(rings[0]), std::string::npos) << "names the truncated file\n" << p.err;
  EXPECT_NE(p.err.find(garbage), std::string::npos) << "names the garbage file\n" << p.err;
  for (size_t i = 1; i < rings.size(); ++i) {
    EXPECT_NE(p.out.find("file " + rings[i]), std::string::npos)
        << "the intact " << rings[i] << " is still printed\n"
        << p.out.substr(0, 2000);
  }
  EXPECT_EQ(p.out.find("file " + rings[0]), std::string::npos);
}

TEST(DumpOfMissingDir, Exits3NamingThePath) {
  ScratchDir scratch;
  const std::string missing = scratch / "no-such-trace-dir";
  const ProcessResult p = RunProcess({Cli(), "dump", missing}, {}, 30);
  EXPECT_EQ(p.exit_code, kUnusableInput);
  EXPECT_NE(p.err.find(missing), std::string::npos) << p.err;
  EXPECT_TRUE(p.out.empty()) << p.out;
}

}  // namespace
}  // namespace ncclscope::testing
