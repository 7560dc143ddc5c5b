// wait_until (runtime/core/polling_wait.h): what DeferredHostRead::take waits with on a GPU. The
// wait must leave its core free: a spinning loop polls millions of times in 100 ms.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>

#include "runtime/core/polling_wait.h"

namespace lmkit {
namespace {

TEST(PollingWaitTest, SomethingAlreadyDoneTakesOnePoll) {
  EXPECT_EQ(wait_until([] { return true; }), 1);
}

TEST(PollingWaitTest, ALongWaitSleepsInsteadOfSpinning) {
  std::atomic<bool> done{false};
  std::thread setter([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    done = true;
  });
  const auto polls = wait_until([&] { return done.load(); });
  setter.join();
  // 64 quick polls, 5 doubling sleeps (20-320 µs), then one poll per 500 µs: ~270 in 100 ms, more
  // only when the machine is slow to wake the thread (fewer, then).
  EXPECT_LT(polls, 2000);
  EXPECT_GT(polls, 64) << "it returned before the thing was done";
}

TEST(PollingWaitTest, SleepsDoubleUpToTheLongest) {
  // With no quick polls and 1 ms sleeps from the start, a 50 ms wait polls about 50 times.
  PollingWaitLimits limits;
  limits.quick_polls = 0;
  limits.first_sleep = std::chrono::milliseconds(1);
  limits.longest_sleep = std::chrono::milliseconds(1);
  std::atomic<bool> done{false};
  std::thread setter([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    done = true;
  });
  const auto polls = wait_until([&] { return done.load(); }, limits);
  setter.join();
  EXPECT_LE(polls, 52);
  EXPECT_GE(polls, 2);
}

}  // namespace
}  // namespace lmkit
