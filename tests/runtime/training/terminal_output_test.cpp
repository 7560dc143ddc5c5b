// Output that fits the terminal: display widths, cut and wrapped lines, and the training bar at any
// width (a bar that wraps leaves a copy of itself per redraw).
#include <gtest/gtest.h>

#include <limits>

#include "runtime/core/terminal_text.h"
#include "runtime/training/progress.h"

namespace lmkit {
namespace {

TEST(TerminalTextTest, DisplayWidthCountsCodePointsAndSkipsEscapes) {
  EXPECT_EQ(display_width("abc"), 3U);
  EXPECT_EQ(display_width("σ ≤ ε…"), 6U);
  EXPECT_EQ(display_width("\x1b[Kab\x1b[1;31mc"), 3U);
  EXPECT_EQ(display_width(""), 0U);
}

TEST(TerminalTextTest, FitToWidthCutsWholeCodePointsAndSaysSo) {
  EXPECT_EQ(fit_to_width("abcdef", 6), "abcdef");
  EXPECT_EQ(fit_to_width("abcdef", 4), "abc…");
  EXPECT_EQ(fit_to_width("σσσσσ", 3), "σσ…");
  EXPECT_EQ(display_width(fit_to_width("σσσσσ", 3)), 3U);
  EXPECT_EQ(fit_to_width("abcdef", 0), "abcdef") << "0: no width to fit";
}

TEST(TerminalTextTest, WrapBreaksLongLinesAtSpacesUnderTheirIndent) {
  EXPECT_EQ(wrap_text("  one two three four", 10, 2), "  one two\n    three\n    four");
  EXPECT_EQ(wrap_text("short\n  also short", 20), "short\n  also short");
  EXPECT_EQ(wrap_text("a verylongwordthatdoesnotfit b", 10), "a\nverylongwordthatdoesnotfit\nb");
  EXPECT_EQ(wrap_text("one two three", 0), "one two three");
  EXPECT_EQ(wrap_text("x y\n", 2), "x\ny\n");
  // Any hang (a number from Lua): beyond the width it counts as the width, never as memory.
  EXPECT_EQ(wrap_text("a b", 1, std::numeric_limits<std::size_t>::max()), "a\n b");
  EXPECT_EQ(wrap_text("  a b", 3, 4294967297), "  a\n     b");
  for (const auto& line : {std::string("  lmkit.train{model=, corpus=, run_dir=, lr=30, optimizer=\"sgd\", wdecay=1.2e-06}")}) {
    std::istringstream wrapped(wrap_text(line, 30, 2));
    std::string piece;
    while (std::getline(wrapped, piece)) EXPECT_LE(display_width(piece), 30U) << piece;
  }
}

TEST(ProgressBarTest, TheBarLineNeverReachesTheLastColumn) {
  for (std::size_t width = 1; width <= 160; ++width) {
    const auto line = training::progress_bar_line("finetune", 12, 0.37, 123.456, 30, 45678.9, 3725, width);
    EXPECT_LT(display_width(line), width) << width << ": " << line;
  }
  const auto wide = training::progress_bar_line("epoch", 3, 0.5, 80.25, 30, 1000, 65, 200);
  EXPECT_NE(wide.find("[##############..............]"), std::string::npos) << wide;
  EXPECT_NE(wide.find("ppl    80.25"), std::string::npos) << wide;
  EXPECT_NE(wide.find("ETA 1:05"), std::string::npos) << wide;
  const auto narrow = training::progress_bar_line("epoch", 3, 0.5, 80.25, 30, 1000, 65, 70);
  EXPECT_NE(narrow.find("ETA 1:05"), std::string::npos) << "at 70 columns the bar narrows, the numbers stay: " << narrow;
  EXPECT_EQ(training::progress_bar_line("epoch", 3, 0.5, 80.25, 30, 1000, 65, 0), wide) << "0: no terminal width";
}

}  // namespace
}  // namespace lmkit
