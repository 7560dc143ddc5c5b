// What a training run shows while it works. On a terminal: one bar per epoch that redraws in place
// (at most ~10 times a second) with tokens/s, the running perplexity, the learning rate and the
// ETA of the epoch. Otherwise (a log file, a batch job): plain lines, one per log interval.
// LMKIT_PROGRESS=bar|lines|off overrides the choice.
#pragma once
#include <chrono>
#include <cstdint>
#include <functional>
#include <string>

#include "runtime/core/work_progress.h"  // format_duration

namespace lmkit::training {

// The bar's line for a terminal `width` columns wide (0: no limit): the bar narrows, then goes, so
// that the line never reaches the last column (a wrapped line would leave a copy per redraw).
std::string progress_bar_line(const std::string& label, std::int64_t epoch, double fraction, double ppl, double lr,
                              double tokens_per_s, double eta_seconds, std::size_t width);

class Progress {
 public:
  enum class Mode { kBar, kLines, kOff };
  // Mode from LMKIT_PROGRESS, else kBar when stdout is a terminal, else kLines.
  static Mode detect_mode();

  // `sink` receives every plain line (the run's log file); it is called in every mode.
  explicit Progress(Mode mode, std::function<void(const std::string&)> sink = nullptr);

  void start_epoch(std::int64_t epoch, std::int64_t total_units, const std::string& label = "epoch");
  // done: units of this epoch done so far; ppl/lr/tokens_per_s as now.
  void update(std::int64_t done, double ppl, double lr, double tokens_per_s);
  // A log-interval line (printed in kLines mode; in kBar mode it goes to the sink only).
  void interval_line(const std::string& line);
  // A line that must be seen in every mode (clears the bar first).
  void line(const std::string& text);
  void end_epoch();

  Mode mode() const { return mode_; }

 private:
  void clear_bar();
  Mode mode_;
  std::function<void(const std::string&)> sink_;
  std::int64_t epoch_ = 0, total_ = 0;
  std::string label_;
  std::chrono::steady_clock::time_point started_, last_draw_;
  bool bar_visible_ = false;
};

}  // namespace lmkit::training
