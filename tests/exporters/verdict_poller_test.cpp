// The correlator's thread: scrapes read its latest answer and never wait for one, a failing
// analysis keeps the previous answer, and the exporter's shutdown does not wait a whole period.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <stdexcept>
#include <thread>

#include "exporters/prometheus/verdict_poller.h"

namespace ncclscope::testing {
namespace {

using exporters::VerdictPoller;
using Clock = std::chrono::steady_clock;

std::shared_ptr<const hang_detector::Analysis> WithFiles(int files) {
  auto a = std::make_shared<hang_detector::Analysis>();
  a->input.files = files;
  return a;
}

TEST(VerdictPoller, RunsPeriodicallyAndKeepsTheLatestAnswer) {
  std::atomic<int> runs{0};
  VerdictPoller poller([&] { return WithFiles(++runs); }, 0.01);
  EXPECT_EQ(poller.Latest(), nullptr) << "nothing before the first analysis";
  poller.Start();
  const auto start = Clock::now();
  while (runs < 3 && Clock::now() - start < std::chrono::seconds(20)) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  ASSERT_GE(runs.load(), 3);
  ASSERT_NE(poller.Latest(), nullptr);
  EXPECT_GE(poller.Latest()->input.files, 2);
}

TEST(VerdictPoller, AFailingAnalysisKeepsThePreviousAnswer) {
  bool fail = false;
  VerdictPoller poller(
      [&]() -> std::shared_ptr<const hang_detector::Analysis> {
        if (fail) throw std::runtime_error("out of memory, say");
        return WithFiles(7);
      },
      60);
  poller.RunOnce();
  fail = true;
  poller.RunOnce();
  ASSERT_NE(poller.Latest(), nullptr);
  EXPECT_EQ(poller.Latest()->input.files, 7);
}

TEST(VerdictPoller, StopsWithoutWaitingForTheNextPeriod) {
  const auto start = Clock::now();
  {
    VerdictPoller poller([] { return WithFiles(1); }, 3600);
    poller.Start();
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  EXPECT_LT(Clock::now() - start, std::chrono::seconds(10));
}

}  // namespace
}  // namespace ncclscope::testing
