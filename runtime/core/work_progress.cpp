#include "runtime/core/work_progress.h"

#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string_view>

#include <fmt/format.h>

#include "runtime/core/terminal_text.h"

namespace lmkit {

std::string format_duration(double seconds) {
  if (!(seconds >= 0) || seconds > 1e7) return "?";
  const auto s = static_cast<std::int64_t>(seconds + 0.5);
  if (s < 60) return fmt::format("{}s", s);
  if (s < 3600) return fmt::format("{}:{:02d}", s / 60, s % 60);
  return fmt::format("{}:{:02d}:{:02d}", s / 3600, (s / 60) % 60, s % 60);
}

std::function<void(std::int64_t, std::int64_t)> work_progress(const std::string& what, const std::string& unit) {
  const char* setting = std::getenv("LMKIT_PROGRESS");
  if (!::isatty(STDERR_FILENO) || (setting && std::string_view(setting) == "off")) return nullptr;
  using Clock = std::chrono::steady_clock;
  return [what, unit, started = Clock::now(), last = Clock::time_point{}](std::int64_t done, std::int64_t total) mutable {
    const auto now = Clock::now();
    const bool finished = done >= total;
    if (!finished && now - last < std::chrono::milliseconds(200)) return;
    last = now;
    const double seconds = std::chrono::duration<double>(now - started).count();
    const double rate = seconds > 0 ? static_cast<double>(done) / seconds : 0;
    const int percent = total > 0 ? static_cast<int>(100 * done / total) : 100;
    const auto eta = rate > 0 ? format_duration(static_cast<double>(total - done) / rate) : std::string("?");
    const auto line = fmt::format("{}: {:3d}% ({}/{} {}, {:.3g}/s, {} {})", what, percent, done, total, unit, rate,
                                  finished ? "took" : "ETA", finished ? format_duration(seconds) : eta);
    // Never into the last column: a wrapped line would leave a copy of itself per redraw.
    const auto width = terminal_columns(STDERR_FILENO);
    const auto fitted = width == 0 ? line : width > 1 ? fit_to_width(line, width - 1) : std::string();
    std::fprintf(stderr, "\r%s\033[K%s", fitted.c_str(), finished ? "\n" : "");
    std::fflush(stderr);
  };
}

}  // namespace lmkit
