// A word ↔ id mapping built in order of first appearance (AWD-LSTM's data.Dictionary).
//
// Ids are 0-based and are the VALUES stored in token tensors (embedding row indices), in Lua too:
// vocab:id("the") is the number found in corpus.train, vocab:word(0) is the first word added.
#pragma once
#include <cstdint>
#include <deque>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace lmkit::data {

class Vocabulary {
 public:
  // The id of `word`, adding it at the end when it is new.
  std::int64_t add(std::string_view word);
  // The id of `word`, or nullopt when it is not in the vocabulary.
  std::optional<std::int64_t> find(std::string_view word) const;
  // The word with id `id`; throws UsageError when id is outside [0, size()).
  const std::string& word(std::int64_t id) const;
  std::int64_t size() const { return static_cast<std::int64_t>(words_.size()); }
  const std::deque<std::string>& words() const { return words_; }

  // Whitespace-separated words of `text` to ids (with "<eos>" appended when `eos`). Unknown words
  // map to `unk` when given (it must be in the vocabulary), else throw UsageError naming the word.
  std::vector<std::int64_t> encode(std::string_view text, bool eos = false,
                                   const std::optional<std::string>& unk = std::nullopt) const;
  // Ids to words joined by single spaces; throws UsageError for an id out of range.
  std::string decode(const std::vector<std::int64_t>& ids) const;

  bool operator==(const Vocabulary& other) const { return words_ == other.words_; }

  Vocabulary() = default;
  Vocabulary(const Vocabulary& other);
  Vocabulary& operator=(const Vocabulary& other);
  Vocabulary(Vocabulary&&) = default;  // moving a deque keeps its elements where they are
  Vocabulary& operator=(Vocabulary&&) = default;

 private:
  // The map's keys view the words in words_: a deque never moves its elements, so lookups by
  // string_view need no allocation (C++17 has no heterogeneous unordered_map lookup).
  std::deque<std::string> words_;
  std::unordered_map<std::string_view, std::int64_t> ids_;
};

}  // namespace lmkit::data
