// Text that fits a terminal: its width in columns, and lines broken or cut to it, so that a progress
// bar redrawn in place never wraps (a wrapped bar leaves a copy of itself per redraw) and help()
// reads as paragraphs, not as lines cut by the terminal mid-word.
#pragma once
#include <cstddef>
#include <string>

namespace lmkit {

// The width of the terminal on file descriptor `fd`: its window's columns; else $COLUMNS (a
// positive number); else 0 when `fd` is no terminal (a file or a pipe: no width to fit), 80 when it
// is one that does not say.
std::size_t terminal_columns(int fd);
// terminal_columns of standard output, where help() and reports print.
std::size_t output_columns();

// Columns `text` takes: one per UTF-8 code point, none for a terminal escape sequence (ESC [ ... letter).
std::size_t display_width(const std::string& text);

// `text` with every control character (C0, DEL, C1: line breaks, tabs, escape sequences) shown as
// '?': for text from files (a run's settings, a folder's name) printed in a table, which must
// neither break its rows nor reach the terminal as commands.
std::string printable_text(const std::string& text);

// `text` cut to at most `width` columns, its end replaced by "…" when cut; width 0: unchanged.
std::string fit_to_width(const std::string& text, std::size_t width);

// Each line of `text` longer than `width` broken at spaces, the continuation lines indented as the
// line itself is (its leading spaces) plus `hang` columns (at most `width`); a word longer than a
// line is left whole. width 0: unchanged.
std::string wrap_text(const std::string& text, std::size_t width, std::size_t hang = 0);

}  // namespace lmkit
