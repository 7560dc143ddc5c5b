// Making a corpus again from its `origin` (corpus.h): how a resumed run gets the very data it
// trained on without the recipe that built it. Files corpora are read again (through the token
// cache); synthetic ones are regenerated from their options and the exact sequence of draws from
// their stream. The run store also keeps a hash of each split, and resume compares it.
#pragma once
#include <cstdint>

#include <nlohmann/json.hpp>

#include "runtime/data/corpus.h"

namespace lmkit::data {

// UsageError when origin is null or not one this lmkit wrote.
Corpus corpus_from_origin(const nlohmann::json& origin);

// A hash of the token ids of one split (to check that resume sees the same data).
std::uint64_t tokens_hash(const torch::Tensor& tokens);

}  // namespace lmkit::data
