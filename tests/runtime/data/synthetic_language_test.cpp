// Synthetic languages: true log-probabilities normalize, Q*'s rank is what the construction
// promises, sampling is deterministic per seed and consistent with the stated probabilities.
#include "runtime/data/synthetic_language.h"

#include <gtest/gtest.h>

#include <chrono>

#include "runtime/core/error.h"

namespace lmkit::data {
namespace {

std::int64_t numerical_rank(const torch::Tensor& q) {
  const auto sv = torch::linalg_svdvals(q.to(torch::kFloat64));
  const double top = sv.max().item<double>();
  return (sv > 1e-9 * top).sum().item<std::int64_t>();
}

SyntheticOptions small(const std::string& kind, bool bias) {
  SyntheticOptions o;
  o.vocab = 300;
  o.states = 40;
  o.dim = 8;
  o.bias = bias;
  o.kind = kind;
  o.seed = 11;
  return o;
}

TEST(SyntheticLanguageTest, TrueLogProbsSumToOne) {
  for (const auto* kind : {"softmax", "hmm"}) {
    SyntheticLanguage lang(small(kind, true));
    const auto tokens = lang.generate(500);
    const auto q = lang.log_probs(tokens);
    ASSERT_EQ(q.sizes(), (std::vector<std::int64_t>{500, 300}));
    EXPECT_LT((q.exp().sum(1) - 1).abs().max().item<double>(), 1e-6) << kind;
    // nll() is the same quantity without the matrix.
    const auto picked = -q.gather(1, tokens.unsqueeze(1)).squeeze(1);
    EXPECT_LT((picked - lang.nll(tokens)).abs().max().item<double>(), 1e-9) << kind;
  }
}

TEST(SyntheticLanguageTest, SoftmaxKindHasTheRankAskedFor) {
  for (bool bias : {true, false}) {
    SyntheticLanguage lang(small("softmax", bias));
    const auto q = lang.log_probs(lang.generate(3000));
    EXPECT_EQ(lang.expected_rank(), bias ? 10 : 9);
    EXPECT_EQ(numerical_rank(q), lang.expected_rank()) << "bias " << bias;
  }
}

TEST(SyntheticLanguageTest, HmmKindIsHighRank) {
  SyntheticLanguage lang(small("hmm", true));
  const auto q = lang.log_probs(lang.generate(600));
  EXPECT_GT(numerical_rank(q), 100);
}

TEST(SyntheticLanguageTest, DeterministicForASeed) {
  SyntheticLanguage a(small("hmm", true)), b(small("hmm", true));
  const auto first = a.generate(1000);
  EXPECT_TRUE(torch::equal(first, b.generate(1000)));
  EXPECT_FALSE(torch::equal(a.generate(1000), first)) << "the stream continues";
  EXPECT_TRUE(torch::equal(a.generate(1000, 5), b.generate(1000, 5)));
  auto other = small("hmm", true);
  other.seed = 12;
  EXPECT_FALSE(torch::equal(SyntheticLanguage(other).generate(1000), first));
}

TEST(SyntheticLanguageTest, SamplesFollowTheStatedProbabilities) {
  // The mean true NLL of a sample estimates the entropy rate; the sample's frequencies under the
  // softmax kind's known states match P within sampling error.
  auto o = small("softmax", true);
  o.states = 1;  // one state: tokens are i.i.d. from one softmax
  SyntheticLanguage lang(o);
  const auto tokens = lang.generate(200000);
  const auto freq = torch::bincount(tokens, {}, 300).to(torch::kFloat64) / 200000.0;
  const auto p = lang.emission_log_probs()[0].exp();
  EXPECT_LT((freq - p).abs().max().item<double>(), 5 * std::sqrt(p.max().item<double>() / 200000.0));
  const double h = lang.entropy_rate(200000);
  const double exact = -(p * p.log()).sum().item<double>();
  EXPECT_NEAR(h, exact, 0.02);
}

TEST(SyntheticLanguageTest, CorpusHasThreeSplitsAndWordNames) {
  SyntheticLanguage lang(small("softmax", true));
  auto c = lang.corpus(1000, 200, 300);
  EXPECT_EQ(c.train.numel(), 1000);
  EXPECT_EQ(c.test.numel(), 300);
  EXPECT_EQ(c.vocab->size(), 300);
  EXPECT_EQ(c.vocab->word(7), "w7");
  EXPECT_EQ(c.protocol, "synthetic");
}

TEST(SyntheticLanguageTest, RejectsBadOptionsAndTokens) {
  auto o = small("lstm", true);
  EXPECT_THROW(SyntheticLanguage{o}, UsageError);
  SyntheticLanguage lang(small("softmax", true));
  EXPECT_THROW(lang.log_probs(torch::tensor({0, 300}, torch::kInt64)), UsageError);
  EXPECT_THROW(lang.nll(torch::zeros({2, 2}, torch::kInt64)), UsageError);
}

TEST(SyntheticLanguageTest, MeasureThroughput) {
  SyntheticOptions o;  // defaults: V 1000, S 64, d 16
  o.kind = "hmm";
  SyntheticLanguage lang(o);
  const auto start = std::chrono::steady_clock::now();
  const auto tokens = lang.generate(2000000);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf("[ measure  ] synthetic hmm (V 1000, S 64): %.2f M tokens/s; entropy rate %.3f nats (best ppl %.1f)\n",
              2.0 / seconds, lang.entropy_rate(100000), std::exp(lang.entropy_rate(100000)));
  EXPECT_EQ(tokens.numel(), 2000000);
}

}  // namespace
}  // namespace lmkit::data
