#include "runtime/training/progress.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <unistd.h>

#include <fmt/format.h>

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
  constexpr int kWidth = 28;
  const int filled = static_cast<int>(fraction * kWidth);
  std::string bar(static_cast<std::size_t>(filled), '#');
  bar.append(static_cast<std::size_t>(kWidth - filled), '.');
  std::cout << fmt::format("\r{} {:>3} [{}] {:3.0f}%  ppl {:8.2f}  lr {:.3g}  {:.0f} tok/s  ETA {}\x1b[K", label_,
                           epoch_, bar, 100 * fraction, ppl, lr, tokens_per_s, format_duration(eta))
            << std::flush;
  bar_visible_ = true;
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
