#include "runtime/training/progress.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <unistd.h>

#include <fmt/format.h>

#include "runtime/core/terminal_text.h"

namespace lmkit::training {

Progress::Mode Progress::detect_mode() {
  if (const char* forced = std::getenv("LMKIT_PROGRESS")) {
    if (std::strcmp(forced, "bar") == 0) return Mode::kBar;
    if (std::strcmp(forced, "lines") == 0) return Mode::kLines;
    if (std::strcmp(forced, "off") == 0) return Mode::kOff;
  }
  const char* term = std::getenv("TERM");
  const bool dumb = term && std::strcmp(term, "dumb") == 0;
  return ::isatty(STDOUT_FILENO) && !dumb ? Mode::kBar : Mode::kLines;
}

Progress::Progress(Mode mode, std::function<void(const std::string&)> sink) : mode_(mode), sink_(std::move(sink)) {}

void Progress::start_epoch(std::int64_t epoch, std::int64_t total_units, const std::string& label) {
  epoch_ = epoch;
  total_ = total_units;
  label_ = label;
  started_ = std::chrono::steady_clock::now();
  last_draw_ = {};
}

void Progress::update(std::int64_t done, double ppl, double lr, double tokens_per_s) {
  if (mode_ != Mode::kBar) return;
  const auto now = std::chrono::steady_clock::now();
  if (now - last_draw_ < std::chrono::milliseconds(100) && done < total_) return;
  last_draw_ = now;
  const double fraction = total_ > 0 ? std::min(1.0, static_cast<double>(done) / static_cast<double>(total_)) : 0.0;
  const double elapsed = std::chrono::duration<double>(now - started_).count();
  const double eta = fraction > 0 ? elapsed * (1 - fraction) / fraction : -1;
  std::cout << "\r"
            << progress_bar_line(label_, epoch_, fraction, ppl, lr, tokens_per_s, eta, terminal_columns(STDOUT_FILENO))
            << "\x1b[K" << std::flush;
  bar_visible_ = true;
}

std::string progress_bar_line(const std::string& label, std::int64_t epoch, double fraction, double ppl, double lr,
                              double tokens_per_s, double eta_seconds, std::size_t width) {
  const auto head = fmt::format("{} {:>3} ", label, epoch);
  const auto tail = fmt::format("{:3.0f}%  ppl {:8.2f}  lr {:.3g}  {:.0f} tok/s  ETA {}", 100 * fraction, ppl, lr,
                                tokens_per_s, format_duration(eta_seconds));
  constexpr std::size_t kWidest = 28, kNarrowest = 8;
  std::size_t bar_width = kWidest;
  if (width > 0) {
    const auto rest = display_width(head) + display_width(tail) + 4;  // "[", "] " and the last column
    bar_width = width > rest + kNarrowest ? std::min(kWidest, width - rest) : 0;
  }
  std::string line = head;
  if (bar_width > 0) {
    const auto filled = static_cast<std::size_t>(fraction * static_cast<double>(bar_width));
    line += "[" + std::string(filled, '#') + std::string(bar_width - filled, '.') + "] ";
  }
  if (width == 0) return line + tail;
  return width > 1 ? fit_to_width(line + tail, width - 1) : std::string();
}

void Progress::clear_bar() {
  if (bar_visible_) std::cout << "\r\x1b[K" << std::flush;
  bar_visible_ = false;
}

void Progress::interval_line(const std::string& text) {
  if (sink_) sink_(text);
  if (mode_ == Mode::kLines) std::cout << text << std::endl;
}

void Progress::line(const std::string& text) {
  if (sink_) sink_(text);
  if (mode_ == Mode::kOff) return;
  clear_bar();
  std::cout << text << std::endl;
}

void Progress::end_epoch() { clear_bar(); }

}  // namespace lmkit::training
