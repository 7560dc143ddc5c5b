// Reads one split of a corpus the way AWD-LSTM's data.py does: each line is split on whitespace,
// "<eos>" is appended at each line end, and ids come from a shared Vocabulary in order of first
// appearance (so reading train, then valid, then test gives the reference's ids).
//
// Where Python would read the bytes, so do we: "\n", "\r\n" and a lone "\r" end a line (universal
// newlines), whitespace is Python's str.split() set (ASCII blanks, \x1c-\x1f and the Unicode
// spaces such as U+00A0 and U+3000). Deviations, each making bad input an error or a fix rather than
// silent garbage: a UTF-8 byte-order mark at the start is skipped, invalid UTF-8 and an empty file
// are errors naming the file (and the line and column).
#pragma once
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "runtime/data/vocabulary.h"

namespace lmkit::data {

struct TokenizedFile {
  std::vector<std::int64_t> ids;        // one id per word, "<eos>" after each line
  std::vector<std::size_t> line_ends;   // ids.size() after each line: line k is [line_ends[k-1], line_ends[k])
  std::uint64_t content_hash = 0;       // ContentHash of the file's bytes
};

// Reads `path` in chunks (a line may be of any length), adding new words to `vocab`.
// Throws EnvironmentError when the file is missing, unreadable, empty or not UTF-8.
TokenizedFile tokenize_file(const std::filesystem::path& path, Vocabulary& vocab);

// The same rules applied to text in memory; `name` is used in error messages.
TokenizedFile tokenize_text(std::string_view text, Vocabulary& vocab, const std::string& name = "<text>");

}  // namespace lmkit::data
