#include "runtime/data/vocabulary.h"

#include <cctype>

#include "runtime/core/error.h"
#include "runtime/core/number_text.h"

namespace lmkit::data {

Vocabulary::Vocabulary(const Vocabulary& other) {
  for (const auto& w : other.words_) add(w);
}

Vocabulary& Vocabulary::operator=(const Vocabulary& other) {
  if (this != &other) {
    words_.clear();
    ids_.clear();
    for (const auto& w : other.words_) add(w);
  }
  return *this;
}

std::int64_t Vocabulary::add(std::string_view word) {
  const auto found = ids_.find(word);
  if (found != ids_.end()) return found->second;
  const auto id = static_cast<std::int64_t>(words_.size());
  words_.emplace_back(word);
  ids_.emplace(std::string_view(words_.back()), id);
  return id;
}

std::optional<std::int64_t> Vocabulary::find(std::string_view word) const {
  const auto found = ids_.find(word);
  if (found == ids_.end()) return std::nullopt;
  return found->second;
}

const std::string& Vocabulary::word(std::int64_t id) const {
  if (id < 0 || id >= size()) {
    throw UsageError("word id " + integer_text(id) + " is outside the vocabulary [0, " +
                     integer_text(size()) + ") (ids are 0-based tensor values)");
  }
  return words_[static_cast<std::size_t>(id)];
}

std::vector<std::int64_t> Vocabulary::encode(std::string_view text, bool eos,
                                             const std::optional<std::string>& unk) const {
  std::optional<std::int64_t> unk_id;
  if (unk) {
    unk_id = find(*unk);
    if (!unk_id) throw UsageError("the unknown-word token '" + *unk + "' is not in the vocabulary");
  }
  std::vector<std::int64_t> ids;
  auto lookup = [&](std::string_view w) {
    if (auto id = find(w)) {
      ids.push_back(*id);
    } else if (unk_id) {
      ids.push_back(*unk_id);
    } else {
      throw UsageError("word '" + std::string(w) + "' is not in the vocabulary (pass an unk token to map it)");
    }
  };
  std::size_t i = 0;
  while (i < text.size()) {
    while (i < text.size() && std::isspace(static_cast<unsigned char>(text[i]))) ++i;
    const std::size_t start = i;
    while (i < text.size() && !std::isspace(static_cast<unsigned char>(text[i]))) ++i;
    if (i > start) lookup(text.substr(start, i - start));
  }
  if (eos) lookup("<eos>");
  return ids;
}

std::string Vocabulary::decode(const std::vector<std::int64_t>& ids) const {
  std::string text;
  for (std::size_t k = 0; k < ids.size(); ++k) {
    if (k) text += ' ';
    text += word(ids[k]);
  }
  return text;
}

}  // namespace lmkit::data
