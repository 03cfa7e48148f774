// The CUPTI probe fails open: with the real libcupti.so.13 of the CUDA toolkit on a machine
// without a GPU driver, cuptiActivityEnable returns CUPTI_ERROR_UNKNOWN (checked on this project's
// build machines), so the probe must report that and leave nothing behind: no correlation hooks on
// the hot path, no record in the ring. The one warning line and the unchanged job are checked end
// to end (tests/e2e/cupti_test.cpp).
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <string>

#include "plugin/cupti/cupti_correlate.h"
#include "plugin/cupti/cupti_probe.h"

namespace ncclscope::plugin {
namespace {

std::unique_ptr<trace::RingWriter> MakeRing(const std::string& dir) {
  trace::RingOptions o;
  o.dir = dir;
  o.record_capacity = 64;
  o.comm_capacity = 4;
  std::string error;
  auto ring = trace::RingWriter::Create(o, &error);
  EXPECT_NE(ring, nullptr) << error;
  return ring;
}

class CuptiFailOpen : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/ncclscope-cupti-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string dir_;
};

TEST_F(CuptiFailOpen, RealCuptiWithoutADriverIsRefusedAndLeavesNothing) {
  if (!std::filesystem::exists(REAL_CUPTI_LIBRARY)) GTEST_SKIP() << "no " REAL_CUPTI_LIBRARY;
  auto ring = MakeRing(dir_);
  std::string error;
  const auto probe = StartCuptiProbe(ring.get(), REAL_CUPTI_LIBRARY, &error);
  if (probe != nullptr) GTEST_SKIP() << "CUPTI works here: this machine has a GPU driver";
  EXPECT_NE(error.find("cuptiActivityEnable(CONCURRENT_KERNEL) failed"), std::string::npos)
      << error;
  EXPECT_NE(error.find("CUPTI_ERROR_UNKNOWN (999)"), std::string::npos) << error;
  EXPECT_EQ(g_cupti_hooks.load(), nullptr);  // the hot path stays a branch
  EXPECT_EQ(ring->header().write_pos.load(), 0u);
  // A second attempt (another runtime after a fork, say) fails the same way, without a crash.
  std::string again;
  EXPECT_EQ(StartCuptiProbe(ring.get(), REAL_CUPTI_LIBRARY, &again), nullptr);
  EXPECT_EQ(again, error);
}

TEST_F(CuptiFailOpen, MissingLibraryNamesIt) {
  auto ring = MakeRing(dir_);
  std::string error;
  EXPECT_EQ(StartCuptiProbe(ring.get(), "/nonexistent/libcupti.so.13", &error), nullptr);
  EXPECT_NE(error.find("cannot load /nonexistent/libcupti.so.13"), std::string::npos) << error;
  EXPECT_EQ(g_cupti_hooks.load(), nullptr);
}

TEST(CuptiSetting, OnOffOrAPath) {
  EXPECT_EQ(CuptiLibraryFor(""), "");
  EXPECT_EQ(CuptiLibraryFor("0"), "");
  EXPECT_EQ(CuptiLibraryFor("1"), "libcupti.so.13");
  EXPECT_EQ(CuptiLibraryFor("/opt/cuda/lib64/libcupti.so.13"), "/opt/cuda/lib64/libcupti.so.13");
}

}  // namespace
}  // namespace ncclscope::plugin
