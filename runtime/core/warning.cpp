#include "runtime/core/warning.h"

#include <iostream>
#include <mutex>
#include <string>
#include <unordered_set>
#include <utility>

#include <c10/util/Exception.h>
#include <torch/version.h>

namespace lmkit {
namespace {

// Both never destroyed: Torch (or a thread of CUDA's) may warn while the process exits, after
// static destructors ran; a destroyed mutex or std::function there is undefined behaviour.
std::mutex& handler_mutex() {
  static auto* m = new std::mutex;
  return *m;
}

WarningHandler& current_handler() {
  static auto* handler = new WarningHandler;
  return *handler;
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

namespace {

// The distinct texts seen so far; bounded, so that a warning whose text carries a changing number
// cannot grow it without limit (past the bound, texts are still shown once each while the set
// holds them, and the rest are counted, not shown).
constexpr std::size_t kMaxDistinctTorchWarnings = 4096;

struct TorchWarningLog {
  std::mutex mutex;
  std::unordered_set<std::string> texts;
  long long seen = 0, distinct = 0;
};

TorchWarningLog& torch_warning_log() {
  // Never destroyed: Torch may warn while the process exits, after static destructors ran.
  static auto* log = new TorchWarningLog;
  return *log;
}

void forward_torch_warning(const std::string& text) {
  auto& log = torch_warning_log();
  {
    std::lock_guard<std::mutex> lock(log.mutex);
    ++log.seen;
    if (log.texts.count(text) > 0 || log.texts.size() >= kMaxDistinctTorchWarnings) return;
    log.texts.insert(text);
    ++log.distinct;
  }
  warn("Torch: " + text + " (shown once; later repeats are not printed)");
}

// Torch's handler interface changed in 2.0: (location, text, verbatim) before, a Warning after.
class OnceEachTorchWarning : public c10::WarningHandler {
 public:
#if TORCH_VERSION_MAJOR >= 2
  void process(const c10::Warning& warning) override { forward_torch_warning(warning.msg()); }
#else
  void process(const c10::SourceLocation&, const std::string& msg, const bool) override { forward_torch_warning(msg); }
#endif
};

}  // namespace

void route_torch_warnings() {
  static auto* handler_object = new OnceEachTorchWarning;  // never destroyed, as the log
  auto& handler = *handler_object;
#if TORCH_VERSION_MAJOR >= 2
  c10::WarningUtils::set_warning_handler(&handler);
#else
  c10::Warning::set_warning_handler(&handler);
#endif
}

TorchWarningCounts torch_warning_counts() {
  auto& log = torch_warning_log();
  std::lock_guard<std::mutex> lock(log.mutex);
  return {log.seen, log.distinct};
}

}  // namespace lmkit
