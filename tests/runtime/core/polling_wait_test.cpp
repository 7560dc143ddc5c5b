// wait_until (runtime/core/polling_wait.h): what DeferredHostRead::take waits with on a GPU. The
// wait must leave its core free: a spinning loop polls millions of times in 100 ms.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

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

TEST(PollingWaitTest, SleepsDoubleFromTheFirstUpToTheLongest) {
  PollingWaitLimits limits;
  limits.quick_polls = 2;
  std::vector<long long> sleeps;
  limits.sleep = [&sleeps](std::chrono::microseconds us) { sleeps.push_back(us.count()); };
  int calls = 0;
  EXPECT_EQ(wait_until([&calls] { return ++calls == 11; }, limits), 11);
  // 2 quick polls, then a sleep after each of the 8 polls that were not yet done.
  EXPECT_EQ(sleeps, (std::vector<long long>{20, 40, 80, 160, 320, 500, 500, 500}));
}

}  // namespace
}  // namespace lmkit
