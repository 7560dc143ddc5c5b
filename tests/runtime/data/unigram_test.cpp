// The unigram yardstick against its closed form on a corpus small enough to count by hand.
#include "runtime/data/unigram.h"

#include <gtest/gtest.h>

#include <cmath>

#include "runtime/core/error.h"
#include "tests/support/failure_text.h"

namespace lmkit::data {
namespace {

using testing::contains;
using testing::failure;

// Vocabulary a, b, c; train a a b; valid b; test a c (c never seen in training).
Corpus counted_corpus() {
  auto vocab = std::make_shared<Vocabulary>();
  for (const char* w : {"a", "b", "c"}) vocab->add(w);
  Corpus corpus;
  corpus.name = "handmade";
  corpus.vocab = vocab;
  corpus.train = torch::tensor({0, 0, 1}, torch::kInt64);  // host: a handmade corpus
  corpus.valid = torch::tensor({1}, torch::kInt64);        // host: a handmade corpus
  corpus.test = torch::tensor({0, 2}, torch::kInt64);      // host: a handmade corpus
  return corpus;
}

TEST(UnigramTest, PerplexityIsTheClosedFormOfAddHalfCounts) {
  const auto corpus = counted_corpus();
  // p(a) = (2 + ½)/(3 + 3·½) = 2.5/4.5, p(c) = 0.5/4.5: ppl = 4.5 / √(2.5·0.5).
  EXPECT_NEAR(unigram_perplexity(corpus), 4.5 / std::sqrt(1.25), 1e-12);
  EXPECT_NEAR(unigram_perplexity(corpus, "valid"), 4.5 / 1.5, 1e-12);
  // Add-one: p(a) = 3/6, p(b) = 2/6, p(c) = 1/6 over train a a b.
  EXPECT_NEAR(unigram_perplexity(corpus, "train", 1.0), std::exp(-(2 * std::log(0.5) + std::log(2.0 / 6)) / 3), 1e-12);
  // Unsmoothed on the training split itself: the maximum-likelihood unigram.
  EXPECT_NEAR(unigram_perplexity(corpus, "train", 0.0), std::exp(-(2 * std::log(2.0 / 3) + std::log(1.0 / 3)) / 3), 1e-12);
}

TEST(UnigramTest, NonsenseIsRefusedInWords) {
  const auto corpus = counted_corpus();
  EXPECT_TRUE(contains(failure([&] { unigram_perplexity(corpus, "dev"); }), "\"train\", \"valid\" or \"test\", got \"dev\""));
  EXPECT_TRUE(contains(failure([&] { unigram_perplexity(corpus, "test", -1.0); }), "smoothing must be a finite number ≥ 0"));
  EXPECT_TRUE(contains(failure([&] { unigram_perplexity(corpus, "test", 0.0); }), "the word 'c' of the test split never occurs"));
  auto empty = corpus;
  empty.test = torch::zeros({0}, torch::kInt64);  // host: an empty split
  EXPECT_TRUE(contains(failure([&] { unigram_perplexity(empty); }), "the test split is empty"));
  auto outside = corpus;
  outside.test = torch::tensor({0, 3}, torch::kInt64);  // host: an id past the vocabulary
  EXPECT_TRUE(contains(failure([&] { unigram_perplexity(outside); }), "holds id 3, outside the vocabulary's [0, 3)"));
}

}  // namespace
}  // namespace lmkit::data
