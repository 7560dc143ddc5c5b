// The causal Transformer encoder against independent truths: a naive O(T²) attention loop, the
// closed-form parameter count, the sinusoid formula, causality, the sliding context and finite
// differences (float64).
#include "runtime/models/transformer_encoder.h"

#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <string>

#include "runtime/core/error.h"
#include "tests/support/failure_text.h"
#include "tests/support/gradcheck.h"

namespace lmkit {
namespace {

using testing::contains;
using testing::failure;

TransformerOptions tiny(std::int64_t context = 8) {
  TransformerOptions o;
  o.vocab_size = 11;
  o.emb = 6;
  o.nlayers = 2;
  o.heads = 3;
  o.ff = 10;
  o.context = context;
  o.dropout = 0.0;
  o.attention_dropout = 0.0;
  return o;
}

// A float64 model in evaluation mode.
TransformerEncoder exact_model(const TransformerOptions& o, std::uint64_t seed = 5) {
  torch::manual_seed(seed);
  TransformerEncoder model(o);
  model->to(torch::kFloat64);
  model->eval();
  return model;
}

torch::Tensor output_of(TransformerEncoder& model, const torch::Tensor& ids) {
  torch::NoGradGuard no_grad;
  return model->forward(ids, model->no_tokens(ids.size(1))).output;
}

TEST(TransformerEncoderTest, ParametersCountAsTheClosedForm) {
  for (const std::string positions : {"learned", "sinusoidal"}) {
    for (const auto& [d, ff, layers, heads] : std::vector<std::array<std::int64_t, 4>>{{6, 10, 2, 3}, {8, 32, 3, 2}, {4, 4, 1, 1}}) {
      auto o = tiny(9);
      o.emb = d, o.ff = ff, o.nlayers = layers, o.heads = heads, o.positions = positions;
      TransformerEncoder model(o);
      std::int64_t counted = 0;
      for (const auto& p : model->parameters()) counted += p.numel();
      const std::int64_t per_block = 4 * d * d + 2 * d * ff + 9 * d + ff;
      const std::int64_t want = 11 * d + (positions == "learned" ? 9 * d : 0) + layers * per_block + 2 * d;
      EXPECT_EQ(counted, want) << positions << " d=" << d;
      EXPECT_EQ(TransformerEncoderImpl::parameter_count(o), want);
    }
  }
}

TEST(TransformerEncoderTest, AttentionEqualsANaiveLoopAndTheFirstPositionSeesOnlyItself) {
  torch::manual_seed(3);
  const std::int64_t B = 2, H = 3, S = 6, dh = 4;
  auto q = torch::randn({B, H, S, dh}, torch::kFloat64), k = torch::randn_like(q), v = torch::randn_like(q);
  const auto got = causal_attention(q, k, v, 0.0, false);
  auto want = torch::zeros_like(q);
  for (std::int64_t b = 0; b < B; ++b) {
    for (std::int64_t h = 0; h < H; ++h) {
      for (std::int64_t i = 0; i < S; ++i) {
        std::vector<double> scores;
        double largest = -INFINITY;
        for (std::int64_t j = 0; j <= i; ++j) {
          double dot = 0;
          for (std::int64_t c = 0; c < dh; ++c) dot += q[b][h][i][c].item<double>() * k[b][h][j][c].item<double>();
          scores.push_back(dot / std::sqrt(static_cast<double>(dh)));
          largest = std::max(largest, scores.back());
        }
        double total = 0;
        for (auto& s : scores) total += (s = std::exp(s - largest));
        for (std::int64_t c = 0; c < dh; ++c) {
          double value = 0;
          for (std::int64_t j = 0; j <= i; ++j) value += scores[j] / total * v[b][h][j][c].item<double>();
          want[b][h][i][c] = value;
        }
      }
    }
  }
  EXPECT_LE((got - want).abs().max().item<double>(), 1e-12);
  EXPECT_LE((got.select(2, 0) - v.select(2, 0)).abs().max().item<double>(), 1e-15);
}

TEST(TransformerEncoderTest, SinusoidalPositionsAreTheFormula) {
  const auto table = sinusoidal_positions(7, 6);
  for (std::int64_t p = 0; p < 7; ++p) {
    for (std::int64_t i = 0; i < 3; ++i) {
      const double angle = static_cast<double>(p) / std::pow(10000.0, 2.0 * static_cast<double>(i) / 6.0);
      EXPECT_NEAR(table[p][2 * i].item<double>(), std::sin(angle), 1e-15);
      EXPECT_NEAR(table[p][2 * i + 1].item<double>(), std::cos(angle), 1e-15);
    }
  }
  EXPECT_EQ(sinusoidal_positions(3, 5).sizes(), torch::IntArrayRef({3, 5}));
}

TEST(TransformerEncoderTest, LaterTokensNeverChangeEarlierOutputs) {
  for (const std::string positions : {"learned", "sinusoidal"}) {
    auto o = tiny();
    o.positions = positions;
    auto model = exact_model(o);
    torch::manual_seed(9);
    const auto ids = torch::randint(0, 11, {8, 3}, torch::kInt64);
    const auto base = output_of(model, ids);
    for (std::int64_t t = 0; t < 8; ++t) {
      auto changed = ids.clone();
      changed.slice(0, t) = (changed.slice(0, t) + 1 + t) % 11;
      const auto out = output_of(model, changed);
      if (t > 0) {
        EXPECT_LE((out.slice(0, 0, t) - base.slice(0, 0, t)).abs().max().item<double>(), 1e-12) << positions << " t=" << t;
      }
      EXPECT_GT((out.slice(0, t) - base.slice(0, t)).abs().max().item<double>(), 1e-6) << "the change is seen from t on";
    }
  }
}

TEST(TransformerEncoderTest, AStreamReadInWindowsSeesASlidingContext) {
  // Within the context: two windows with the state carried equal one pass.
  auto model = exact_model(tiny(16));
  torch::manual_seed(4);
  const auto stream = torch::randint(0, 11, {10, 2}, torch::kInt64);
  torch::NoGradGuard no_grad;
  const auto whole = output_of(model, stream);
  const auto first = model->forward(stream.slice(0, 0, 4), model->no_tokens(2));
  const auto second = model->forward(stream.slice(0, 4), first.state);
  EXPECT_LE((torch::cat({first.output, second.output}) - whole).abs().max().item<double>(), 1e-12);

  // Past the context: a window of T tokens continues from the last context − T tokens before it.
  auto short_model = exact_model(tiny(5));
  auto state = short_model->no_tokens(2);
  for (std::int64_t t = 0; t < 10; t += 2) {
    const auto step = short_model->forward(stream.slice(0, t, t + 2), state);
    state = step.state;
    EXPECT_LE(state.size(0), 4);
    for (std::int64_t i = 0; i < 2; ++i) {
      const auto end = t + i + 1, start = std::max<std::int64_t>(0, t - (5 - 2));
      const auto alone = output_of(short_model, stream.slice(0, start, end));
      EXPECT_LE((step.output[i] - alone[end - start - 1]).abs().max().item<double>(), 1e-12) << "position " << t + i;
    }
  }
}

TEST(TransformerEncoderTest, GradientsMatchFiniteDifferences) {
  for (const std::string positions : {"learned", "sinusoidal"}) {
    auto o = tiny(5);
    o.vocab_size = 7, o.emb = 4, o.heads = 2, o.ff = 6, o.positions = positions;
    auto model = exact_model(o, 21);
    const auto ids = torch::tensor({2, 5, 1, 6, 2, 0}, torch::kInt64).view({3, 2});
    std::vector<torch::Tensor> inputs{model->embedding_weight, model->blocks[0].qkv->weight, model->blocks[1].mlp_out->weight,
                                      model->blocks[0].attention_norm->weight, model->final_norm->bias};
    if (positions == "learned") inputs.push_back(model->position_embedding);
    const auto f = [&](const std::vector<torch::Tensor>&) { return model->forward(ids, model->no_tokens(2)).output; };
    EXPECT_LE(testing::gradient_error(f, inputs), 1e-6) << positions;
  }
}

TEST(TransformerEncoderTest, BadOptionsAndInputsAreNamed) {
  auto o = tiny();
  o.heads = 4;
  EXPECT_TRUE(contains(failure([&] { TransformerEncoder m(o); }), "'heads' must divide emb: 6 is not a multiple of 4"));
  o = tiny();
  o.context = 0;
  EXPECT_TRUE(contains(failure([&] { TransformerEncoder m(o); }), "context"));
  o = tiny();
  o.positions = "rotary";
  EXPECT_TRUE(contains(failure([&] { TransformerEncoder m(o); }), "positions"));
  o = tiny();
  o.vocab_size = std::int64_t{1} << 60;
  EXPECT_TRUE(contains(failure([&] { TransformerEncoder m(o); }), "more than this machine's memory"));
  auto model = exact_model(tiny(4));
  const auto long_input = torch::zeros({5, 1}, torch::kInt64);
  EXPECT_TRUE(contains(failure([&] { model->forward(long_input, model->no_tokens(1)); }), "more than its context of 4"));
  const auto ids = torch::zeros({2, 3}, torch::kInt64);
  EXPECT_TRUE(contains(failure([&] { model->forward(ids, model->no_tokens(2)); }), "previous tokens [P, 3]"));
  EXPECT_TRUE(contains(failure([&] { model->forward(ids + 11, model->no_tokens(3)); }), "outside the model's vocabulary"));
}

}  // namespace
}  // namespace lmkit
