// The neural cache at evaluation against a brute-force reference: the cache distribution built
// context by context with explicit loops from the model's own log-probabilities and hidden states.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "runtime/models/awd_lstm.h"
#include "runtime/core/device.h"
#include "runtime/core/error.h"
#include "runtime/data/batching.h"
#include "runtime/training/cache_evaluation.h"
#include "runtime/training/evaluate_request.h"

namespace lmkit::training {
namespace {

constexpr std::int64_t kVocab = 17;

// A small float64 model with a random decoder bias, so that its distributions are far from uniform.
LanguageModel small_model(nlohmann::json head = {{"kind", "softmax"}}) {
  seed_torch(3);
  LanguageModelOptions o;
  o.encoder(AwdLstmOptions().vocab_size(kVocab).emb(5).nhid(9).nhidlast(5).nlayers(2)).head(std::move(head));
  LanguageModel model(o);
  model->to(torch::kFloat64);
  torch::NoGradGuard no_grad;
  model->decoder_bias.normal_();
  model->embedding().mul_(10);
  return model;
}

// Repetitive tokens, so that the cache has hits.
torch::Tensor tokens(std::int64_t n) {
  seed_torch(8);
  auto base = torch::randint(0, kVocab, {n / 3 + 1}, torch::kInt64);
  return torch::cat({base, base, base}).narrow(0, 0, n);
}

// Mean NLL of column-by-column evaluation with the cache, by explicit loops: each column's stream
// read in one pass from a zero state (the same states as windows with the state carried).
double brute_force(LanguageModel& model, const torch::Tensor& stream, std::int64_t batch_size, const CacheOptions& o) {
  model->eval();
  torch::NoGradGuard no_grad;
  const auto source = data::batchify(stream, batch_size);
  double total = 0;
  std::int64_t count = 0;
  for (std::int64_t b = 0; b < batch_size; ++b) {
    const auto column = source.select(1, b);
    const auto n = column.size(0);
    auto out = model->encode(column.narrow(0, 0, n - 1).view({-1, 1}), model->init_hidden(1));
    const auto logp = model->head->log_probs(out.output, model->decoder());  // [n − 1, V]
    const auto h = out.raw.squeeze(1);                                       // [n − 1, d]
    for (std::int64_t t = 0; t < n - 1; ++t) {
      const auto target = column[t + 1].item<std::int64_t>();
      double p = std::exp(logp[t][target].item<double>());
      if (o.lambda > 0 && t >= o.window) {
        std::vector<double> scores;
        double max_score = -INFINITY;
        for (std::int64_t i = t - o.window; i < t; ++i) {
          scores.push_back(o.theta * h[t].dot(h[i]).item<double>());
          max_score = std::max(max_score, scores.back());
        }
        double norm = 0, hit = 0;
        for (std::size_t k = 0; k < scores.size(); ++k) {
          const double w = std::exp(scores[k] - max_score);
          norm += w;
          if (column[t - o.window + static_cast<std::int64_t>(k) + 1].item<std::int64_t>() == target) hit += w;
        }
        p = (1 - o.lambda) * p + o.lambda * hit / norm;
      }
      total -= std::log(p);
      ++count;
    }
  }
  return total / static_cast<double>(count);
}

TEST(CacheEvaluationTest, WithoutTheCacheItIsThePlainEvaluation) {
  auto model = small_model();
  const auto stream = tokens(300);
  CacheOptions o;
  o.lambda = 0;
  o.batch_size = 2;
  o.bptt = 11;
  const auto cached = cache_evaluate(model, stream, o);
  const auto plain = evaluate(model, stream, 2, 11);
  EXPECT_EQ(cached.tokens, plain.tokens);
  EXPECT_NEAR(cached.loss, plain.loss, 1e-12);
}

// lmkit.evaluate's choice (evaluate_request.h): the plain evaluation at main.py's batch size 10, or
// with a cache pointer.py's evaluation at batch size 1, unless a batch size is given.
TEST(CacheEvaluationTest, EvaluateRequestsTakeEachReferencesBatchSize) {
  auto model = small_model();
  const auto stream = tokens(300);
  EvaluateRequest plain;
  plain.bptt = 11;
  const auto p = evaluate_stream(model, stream, plain);
  EXPECT_EQ(p.tokens, evaluate(model, stream, 10, 11).tokens);
  EXPECT_EQ(p.loss, evaluate(model, stream, 10, 11).loss);
  EvaluateRequest cached = plain;
  cached.cache = CacheOptions();
  cached.cache->window = 20;
  cached.cache->batch_size = 7;  // the request's batch size wins over the cache's own fields
  CacheOptions one = *cached.cache;
  one.batch_size = 1;
  one.bptt = 11;
  EXPECT_EQ(evaluate_stream(model, stream, cached).loss, cache_evaluate(model, stream, one).loss);
  EXPECT_EQ(evaluate_stream(model, stream, cached).tokens, 299);  // batch size 1: every token but the first
  cached.batch_size = 3;
  one.batch_size = 3;
  EXPECT_EQ(evaluate_stream(model, stream, cached).loss, cache_evaluate(model, stream, one).loss);
}

TEST(CacheEvaluationTest, EqualsTheBruteForceCacheForEveryBatchSizeAndFlatness) {
  for (const auto& [batch_size, theta, window] : {std::tuple<std::int64_t, double, std::int64_t>{1, 0.7, 25}, {3, 0.7, 10},
                                                  {1, 0.0, 7}, {2, 2.5, 40}}) {
    auto model = small_model();
    const auto stream = tokens(330);
    CacheOptions o;
    o.window = window;
    o.theta = theta;
    o.lambda = 0.3;
    o.batch_size = batch_size;
    o.bptt = 13;  // windows of the stream cut across the cache's window
    const auto cached = cache_evaluate(model, stream, o);
    EXPECT_NEAR(cached.loss, brute_force(model, stream, batch_size, o), 1e-10)
        << "batch " << batch_size << ", theta " << theta << ", window " << window;
  }
}

TEST(CacheEvaluationTest, TheCacheHelpsOnRepeatedTextAndWorksForAnyHead) {
  auto model = small_model({{"kind", "mos"}, {"K", 3}});
  const auto stream = tokens(300);  // the text repeats every 100 tokens
  CacheOptions o;
  o.window = 120;
  o.theta = 1.0;
  o.lambda = 0.5;
  const auto cached = cache_evaluate(model, stream, o);
  EXPECT_NEAR(cached.loss, brute_force(model, stream, 1, o), 1e-10);
  EXPECT_LT(cached.loss, evaluate(model, stream, 1, 70).loss);
}

TEST(CacheEvaluationTest, BadOptionsAreRefused) {
  auto model = small_model();
  const auto stream = tokens(100);
  CacheOptions o;
  o.window = 0;
  EXPECT_THROW(cache_evaluate(model, stream, o), UsageError);
  o = {};
  o.lambda = 1.5;
  EXPECT_THROW(cache_evaluate(model, stream, o), UsageError);
  o = {};
  o.theta = -1;
  EXPECT_THROW(cache_evaluate(model, stream, o), UsageError);
  o = {};
  o.theta = NAN;
  EXPECT_THROW(cache_evaluate(model, stream, o), UsageError);
}

}  // namespace
}  // namespace lmkit::training
