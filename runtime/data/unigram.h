// The unigram yardstick: the perplexity of a model that knows each word's frequency in the
// training split and nothing of its context. A language model near it has learnt little beyond
// word frequencies, so recipe reports print it beside their models (as the quickstart does).
#pragma once
#include <optional>
#include <string>

#include "runtime/data/corpus.h"

namespace lmkit::data {

// exp of the mean −log p(w) over the split `split` ("train", "valid" or "test"; default "test"),
// where p(w) = (count_train(w) + α) / (n_train + α·V) with α = `smoothing` (default ½, add-½:
// a word unseen in training keeps a finite probability; 0 is allowed when every word of the split
// was seen). Computed in float64. Throws UsageError for an unknown split, a negative or non-finite
// α, an empty split, or α = 0 with an unseen word (naming it).
double unigram_perplexity(const Corpus& corpus, const std::optional<std::string>& split = std::nullopt,
                          std::optional<double> smoothing = std::nullopt);

}  // namespace lmkit::data
