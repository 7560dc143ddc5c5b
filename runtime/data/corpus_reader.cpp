#include "runtime/data/corpus_reader.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>

#include "runtime/core/atomic_file.h"
#include "runtime/core/error.h"
#include "runtime/core/number_text.h"
#include "runtime/data/content_hash.h"

namespace lmkit::data {
namespace {

constexpr std::size_t kChunk = 1 << 22;  // 4 MiB reads; a longer line just grows the buffer

// Python's str.isspace() for ASCII, minus the line ends handled by the line splitter.
bool ascii_blank(unsigned char c) {
  return c == ' ' || c == '\t' || c == '\v' || c == '\f' || (c >= 0x1c && c <= 0x1f);
}

bool unicode_space(std::uint32_t cp) {
  return cp == 0x85 || cp == 0xA0 || cp == 0x1680 || (cp >= 0x2000 && cp <= 0x200A) || cp == 0x2028 ||
         cp == 0x2029 || cp == 0x202F || cp == 0x205F || cp == 0x3000;
}

// Splits lines into words and words into ids; tracks the line number for messages.
class Tokenizer {
 public:
  Tokenizer(Vocabulary& vocab, TokenizedFile& out, std::string name)
      : vocab_(vocab), out_(out), name_(std::move(name)) {}

  // One line without its terminator.
  void line(const char* p, std::size_t n) {
    ++line_number_;
    std::size_t i = 0;
    if (line_number_ == 1 && n >= 3 && std::memcmp(p, "\xEF\xBB\xBF", 3) == 0) i = 3;  // BOM
    std::size_t word_start = i;
    bool in_word = false;
    while (i < n) {
      const auto c = static_cast<unsigned char>(p[i]);
      std::size_t width = 1;
      bool blank;
      if (c < 0x80) {
        blank = ascii_blank(c);
      } else {
        const std::uint32_t cp = decode(p, n, i, width);
        blank = unicode_space(cp);
      }
      if (blank) {
        if (in_word) word(p + word_start, i - word_start);
        in_word = false;
      } else if (!in_word) {
        in_word = true;
        word_start = i;
      }
      i += width;
    }
    if (in_word) word(p + word_start, n - word_start);
    out_.ids.push_back(eos_id());
    out_.line_ends.push_back(out_.ids.size());
  }

  std::size_t lines() const { return line_number_; }

 private:
  // "<eos>" takes its id when first met, after the first line's words, as in the reference;
  // the vocabulary only grows, so the id found once stays valid.
  std::int64_t eos_id() {
    if (eos_ < 0) eos_ = vocab_.add("<eos>");
    return eos_;
  }

  void word(const char* p, std::size_t n) { out_.ids.push_back(vocab_.add(std::string_view(p, n))); }

  static std::string hex(unsigned char byte) {
    char text[8];
    std::snprintf(text, sizeof text, "0x%02X", byte);
    return text;
  }

  // `column` is the byte where the broken character starts (its lead byte), 0-based.
  [[noreturn]] void invalid(std::size_t column, unsigned char byte, const std::string& why = "") const {
    throw EnvironmentError(name_ + ":" + integer_text(line_number_) + ": invalid UTF-8 (byte " + hex(byte) +
                           " at byte column " + integer_text(column + 1) + (why.empty() ? "" : ": " + why) +
                           "); corpora must be UTF-8 text (convert with iconv)");
  }

  // Decodes the UTF-8 sequence at p[i], rejecting overlong forms, surrogates and values past U+10FFFF.
  std::uint32_t decode(const char* p, std::size_t n, std::size_t i, std::size_t& width) const {
    const auto b0 = static_cast<unsigned char>(p[i]);
    std::uint32_t cp;
    std::uint32_t min;
    if (b0 >= 0xC2 && b0 <= 0xDF) {
      width = 2, cp = b0 & 0x1F, min = 0x80;
    } else if (b0 >= 0xE0 && b0 <= 0xEF) {
      width = 3, cp = b0 & 0x0F, min = 0x800;
    } else if (b0 >= 0xF0 && b0 <= 0xF4) {
      width = 4, cp = b0 & 0x07, min = 0x10000;
    } else {
      invalid(i, b0);
    }
    const auto starts = "it starts a " + integer_text(static_cast<std::int64_t>(width)) + "-byte character";
    if (i + width > n) invalid(i, b0, starts + " but the line ends first");
    for (std::size_t k = 1; k < width; ++k) {
      const auto b = static_cast<unsigned char>(p[i + k]);
      if ((b & 0xC0) != 0x80) {
        invalid(i, b0, starts + " but the next byte " + hex(b) + " does not continue it");
      }
      cp = (cp << 6) | (b & 0x3F);
    }
    if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) invalid(i, b0);
    return cp;
  }

  Vocabulary& vocab_;
  TokenizedFile& out_;
  std::string name_;
  std::int64_t eos_ = -1;
  std::size_t line_number_ = 0;
};

// Feeds complete lines of `buffer` to the tokenizer and returns how many bytes were consumed; the
// rest (an unfinished line, or a '\r' whose '\n' may follow in the next chunk) waits for more input.
std::size_t feed_lines(Tokenizer& tokenizer, const char* buffer, std::size_t size, bool at_end) {
  std::size_t start = 0;
  std::size_t i = 0;
  while (i < size) {
    const char c = buffer[i];
    if (c == '\n') {
      tokenizer.line(buffer + start, i - start);
      start = ++i;
    } else if (c == '\r') {
      if (i + 1 == size && !at_end) break;
      tokenizer.line(buffer + start, i - start);
      i += (i + 1 < size && buffer[i + 1] == '\n') ? 2 : 1;
      start = i;
    } else {
      const void* next = std::memchr(buffer + i, '\n', size - i);
      const void* next_cr = std::memchr(buffer + i, '\r', (next ? static_cast<const char*>(next) : buffer + size) - (buffer + i));
      const char* stop = static_cast<const char*>(next_cr ? next_cr : next);
      i = stop ? static_cast<std::size_t>(stop - buffer) : size;
    }
  }
  if (at_end && start < size) {
    tokenizer.line(buffer + start, size - start);  // a last line without a terminator still counts
    start = size;
  }
  return start;
}

struct FileCloser {
  void operator()(std::FILE* f) const { std::fclose(f); }
};

}  // namespace

TokenizedFile tokenize_text(std::string_view text, Vocabulary& vocab, const std::string& name) {
  TokenizedFile out;
  if (text.empty()) throw EnvironmentError(name + ": the file is empty (a corpus split needs at least one line)");
  Tokenizer tokenizer(vocab, out, name);
  feed_lines(tokenizer, text.data(), text.size(), true);
  out.content_hash = hash_bytes(text.data(), text.size());
  return out;
}

TokenizedFile tokenize_file(const std::filesystem::path& path, Vocabulary& vocab) {
  const std::string name = path.string();
  require_readable_file(name, "corpus file");
  std::unique_ptr<std::FILE, FileCloser> file(std::fopen(name.c_str(), "rb"));
  if (!file) throw EnvironmentError("cannot open " + name + ": " + std::strerror(errno));
  TokenizedFile out;
  Tokenizer tokenizer(vocab, out, name);
  ContentHash hash;
  std::string buffer;
  std::size_t filled = 0;
  std::uint64_t total = 0;
  for (;;) {
    if (buffer.size() < filled + kChunk) buffer.resize(filled + kChunk);
    const std::size_t got = std::fread(buffer.data() + filled, 1, kChunk, file.get());
    if (got < kChunk && std::ferror(file.get())) {
      throw EnvironmentError("cannot read " + name + ": " + std::strerror(errno));
    }
    hash.update(buffer.data() + filled, got);
    total += got;
    filled += got;
    const bool at_end = got < kChunk;
    const std::size_t used = feed_lines(tokenizer, buffer.data(), filled, at_end);
    std::memmove(buffer.data(), buffer.data() + used, filled - used);
    filled -= used;
    if (at_end) break;
  }
  if (total == 0) throw EnvironmentError(name + ": the file is empty (a corpus split needs at least one line)");
  out.content_hash = hash.digest();
  return out;
}

}  // namespace lmkit::data
