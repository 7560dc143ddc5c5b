#include "runtime/data/unigram.h"

#include <cmath>
#include <vector>

#include "runtime/core/error.h"
#include "runtime/core/number_text.h"

namespace lmkit::data {

namespace {

const torch::Tensor& split_tokens(const Corpus& corpus, const std::string& split) {
  if (split == "train") return corpus.train;
  if (split == "valid") return corpus.valid;
  if (split == "test") return corpus.test;
  throw UsageError("unigram_perplexity: split must be \"train\", \"valid\" or \"test\", got \"" + split + "\"");
}

// Counts of each id of a 1-D int64 token tensor (ids checked against the vocabulary's size).
std::vector<double> word_counts(const torch::Tensor& tokens, std::int64_t vocab_size, const std::string& what) {
  std::vector<double> counts(static_cast<std::size_t>(vocab_size), 0.0);
  const auto ids = tokens.contiguous();
  const auto* data = ids.data_ptr<std::int64_t>();
  for (std::int64_t i = 0; i < ids.numel(); ++i) {
    const auto id = data[i];
    if (id < 0 || id >= vocab_size) {
      throw UsageError("unigram_perplexity: the " + what + " split holds id " + integer_text(id) +
                       ", outside the vocabulary's [0, " + integer_text(vocab_size) + ")");
    }
    counts[static_cast<std::size_t>(id)] += 1;
  }
  return counts;
}

}  // namespace

double unigram_perplexity(const Corpus& corpus, const std::optional<std::string>& split, std::optional<double> smoothing) {
  const std::string name = split.value_or("test");
  const double alpha = smoothing.value_or(0.5);
  if (!std::isfinite(alpha) || alpha < 0) {
    throw UsageError("unigram_perplexity: smoothing must be a finite number ≥ 0, got " + describe_number(alpha));
  }
  const auto& evaluated = split_tokens(corpus, name);
  if (!corpus.vocab) throw UsageError("unigram_perplexity: the corpus has no vocabulary");
  const auto vocab_size = static_cast<std::int64_t>(corpus.vocab->size());
  if (evaluated.numel() == 0) throw UsageError("unigram_perplexity: the " + name + " split is empty");
  const auto train_counts = word_counts(corpus.train, vocab_size, "train");
  const auto split_counts = word_counts(evaluated, vocab_size, name);
  const double denominator = static_cast<double>(corpus.train.numel()) + alpha * static_cast<double>(vocab_size);
  double nll = 0;
  for (std::int64_t w = 0; w < vocab_size; ++w) {
    const double n = split_counts[static_cast<std::size_t>(w)];
    if (n == 0) continue;
    const double numerator = train_counts[static_cast<std::size_t>(w)] + alpha;
    if (numerator == 0) {
      throw UsageError("unigram_perplexity: the word '" + corpus.vocab->word(w) + "' of the " + name +
                       " split never occurs in training and smoothing is 0: give smoothing > 0 (e.g. 0.5)");
    }
    nll -= n * std::log(numerator / denominator);
  }
  return std::exp(nll / static_cast<double>(evaluated.numel()));
}

}  // namespace lmkit::data
