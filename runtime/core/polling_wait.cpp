#include "runtime/core/polling_wait.h"

#include <algorithm>
#include <thread>

namespace lmkit {

std::int64_t wait_until(const std::function<bool()>& done, const PollingWaitLimits& limits) {
  std::int64_t polls = 0;
  for (int i = 0; i < limits.quick_polls; ++i) {
    ++polls;
    if (done()) return polls;
    std::this_thread::yield();
  }
  auto sleep = limits.first_sleep;
  for (;;) {
    ++polls;
    if (done()) return polls;
    if (limits.sleep) {
      limits.sleep(sleep);
    } else {
      std::this_thread::sleep_for(sleep);
    }
    sleep = std::min(sleep * 2, limits.longest_sleep);
  }
}

}  // namespace lmkit
