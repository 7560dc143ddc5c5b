#include "runtime/core/warning.h"

#include <iostream>
#include <mutex>
#include <utility>

namespace lmkit {
namespace {

std::mutex& handler_mutex() {
  static std::mutex m;
  return m;
}

WarningHandler& current_handler() {
  static WarningHandler handler;
  return handler;
}

}  // namespace

void warn(const std::string& message) {
  WarningHandler handler;
  {
    std::lock_guard<std::mutex> lock(handler_mutex());
    handler = current_handler();
  }
  if (handler) {
    handler(message);
  } else {
    std::cerr << "lmkit: warning: " << message << std::endl;
  }
}

WarningHandler set_warning_handler(WarningHandler handler) {
  std::lock_guard<std::mutex> lock(handler_mutex());
  return std::exchange(current_handler(), std::move(handler));
}

}  // namespace lmkit
