// Waiting for something only a poll can tell (a CUDA event's query, say) without spinning a core:
// a few quick polls, then sleeps that double from 20 µs up to 500 µs. The caller wakes at most
// 500 µs after the thing happened; what it waits for is the device's previous step, and the
// device has the next step's work queued by then, so a late wake costs no device time.
#pragma once
#include <chrono>
#include <cstdint>
#include <functional>

namespace lmkit {

struct PollingWaitLimits {
  int quick_polls = 64;                                // yields before the first sleep
  std::chrono::microseconds first_sleep{20};
  std::chrono::microseconds longest_sleep{500};
  // How to sleep; empty: std::this_thread::sleep_for (a test records the sleeps instead).
  std::function<void(std::chrono::microseconds)> sleep;
};

// Returns once done() is true; the number of polls it took (done() calls).
std::int64_t wait_until(const std::function<bool()>& done, const PollingWaitLimits& limits = {});

}  // namespace lmkit
