#include "runtime/core/terminal_text.h"

#include <sys/ioctl.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <sstream>
#include <vector>

namespace lmkit {
namespace {

bool is_continuation_byte(unsigned char c) { return (c & 0xC0) == 0x80; }

// The byte length of the escape sequence at text[i] (ESC [ parameters final-letter), 0 if none.
std::size_t escape_length(const std::string& text, std::size_t i) {
  if (text[i] != '\x1b' || i + 1 >= text.size() || text[i + 1] != '[') return 0;
  std::size_t j = i + 2;
  while (j < text.size() && !(text[j] >= '@' && text[j] <= '~')) ++j;
  return j < text.size() ? j - i + 1 : text.size() - i;
}

}  // namespace

std::size_t terminal_columns(int fd) {
  winsize size{};
  if (::ioctl(fd, TIOCGWINSZ, &size) == 0 && size.ws_col > 0) return size.ws_col;
  if (const char* columns = std::getenv("COLUMNS")) {
    char* end = nullptr;
    const long value = std::strtol(columns, &end, 10);
    if (end != columns && *end == '\0' && value > 0 && value < 100000) return static_cast<std::size_t>(value);
  }
  return ::isatty(fd) ? 80 : 0;
}

std::size_t output_columns() { return terminal_columns(STDOUT_FILENO); }

std::size_t display_width(const std::string& text) {
  std::size_t width = 0;
  for (std::size_t i = 0; i < text.size();) {
    if (const auto escape = escape_length(text, i)) {
      i += escape;
      continue;
    }
    if (!is_continuation_byte(static_cast<unsigned char>(text[i]))) ++width;
    ++i;
  }
  return width;
}

std::string printable_text(const std::string& text) {
  std::string out;
  out.reserve(text.size());
  for (std::size_t i = 0; i < text.size(); ++i) {
    const auto byte = static_cast<unsigned char>(text[i]);
    if (byte < 0x20 || byte == 0x7F) {
      out += '?';
    } else if (byte == 0xC2 && i + 1 < text.size() && static_cast<unsigned char>(text[i + 1]) >= 0x80 &&
               static_cast<unsigned char>(text[i + 1]) <= 0x9F) {
      out += '?';  // U+0080..U+009F: C1 controls (0x9B is a one-byte CSI to some terminals)
      ++i;
    } else {
      out += text[i];
    }
  }
  return out;
}

std::string fit_to_width(const std::string& text, std::size_t width) {
  if (width == 0 || display_width(text) <= width) return text;
  std::string kept;
  std::size_t columns = 0;
  for (std::size_t i = 0; i < text.size();) {
    if (const auto escape = escape_length(text, i)) {
      kept.append(text, i, escape);
      i += escape;
      continue;
    }
    std::size_t length = 1;
    while (i + length < text.size() && is_continuation_byte(static_cast<unsigned char>(text[i + length]))) ++length;
    if (columns + 1 > width - 1) break;  // one column left for the ellipsis
    kept.append(text, i, length);
    ++columns;
    i += length;
  }
  return kept + "…";
}

std::string wrap_text(const std::string& text, std::size_t width, std::size_t hang) {
  if (width == 0) return text;
  std::string out;
  std::istringstream lines(text);
  std::string line;
  bool first_line = true;
  while (std::getline(lines, line)) {
    if (!first_line) out += '\n';
    first_line = false;
    if (display_width(line) <= width) {
      out += line;
      continue;
    }
    const auto indent = line.find_first_not_of(' ');
    const std::string lead(indent == std::string::npos ? 0 : indent, ' ');
    // A hang wider than the width holds nothing of the line after it: counted as the width, so
    // that any number given bounds the memory by the line's own length.
    const std::string continuation = lead + std::string(std::min(hang, width), ' ');
    std::istringstream words(line.substr(lead.size()));
    std::string word, current = lead;
    bool empty = true;
    while (words >> word) {
      if (!empty && display_width(current) + 1 + display_width(word) > width) {
        out += current + '\n';
        current = continuation;
        empty = true;
      }
      current += (empty ? "" : " ") + word;
      empty = false;
    }
    out += current;
  }
  if (!text.empty() && text.back() == '\n') out += '\n';
  return out;
}

}  // namespace lmkit
