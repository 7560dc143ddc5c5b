// Every registered head on the causal Transformer encoder: causality through the head, a few
// training steps that lower the loss, save/load, the parameter count by parts, the config's JSON.
#include <gtest/gtest.h>

#include <filesystem>
#include <functional>
#include <string>

#include "runtime/analysis/hidden_size.h"
#include "runtime/analysis/matrix_rank.h"
#include "runtime/analysis/rank_bound.h"
#include "runtime/core/error.h"
#include "runtime/heads/head_registry.h"
#include "runtime/models/checkpoint.h"
#include "runtime/models/language_model.h"
#include "runtime/models/transformer_encoder.h"
#include "tests/support/failure_text.h"
#include "tests/support/temporary_folder.h"

namespace lmkit {
namespace {

using testing::contains;
using testing::failure;

nlohmann::json transformer_config(const nlohmann::json& head) {
  return {{"encoder", "transformer"}, {"vocab_size", 13}, {"emb", 8}, {"nlayers", 2}, {"heads", 2}, {"ff", 12},
          {"context", 10}, {"dropout", 0.0}, {"attention_dropout", 0.0}, {"head", head}};
}

LanguageModel transformer_model(const nlohmann::json& head, torch::Dtype dtype = torch::kFloat64) {
  torch::manual_seed(17);
  LanguageModel model(language_model_options_from_json(transformer_config(head)));
  model->to(dtype);
  return model;
}

torch::Tensor log_probs_of(LanguageModel& model, const torch::Tensor& ids) {
  torch::NoGradGuard no_grad;
  return model->log_probs(ids, model->init_hidden(ids.size(1))).first;
}

TEST(TransformerModelTest, EveryHeadsOutputsAtTNeverSeeLaterTokens) {
  torch::manual_seed(2);
  const std::int64_t T = 6, B = 2;
  const auto ids = torch::randint(0, 13, {T, B}, torch::kInt64);
  for (const auto& head : head_examples()) {
    SCOPED_TRACE(head.dump());
    auto model = transformer_model(head);
    model->eval();
    const auto base = log_probs_of(model, ids);
    for (const std::int64_t t : {1, 3, 5}) {
      auto changed = ids.clone();
      changed.slice(0, t) = (changed.slice(0, t) + 5) % 13;
      const auto out = log_probs_of(model, changed);
      // Rows t·B + b: the first t positions of every sequence.
      EXPECT_LE((out.slice(0, 0, t * B) - base.slice(0, 0, t * B)).abs().max().item<double>(), 1e-12) << "t=" << t;
      EXPECT_GT((out.slice(0, t * B) - base.slice(0, t * B)).abs().max().item<double>(), 1e-9) << "t=" << t;
    }
  }
}

TEST(TransformerModelTest, EveryHeadTrainsAFewStepsAndLowersTheLoss) {
  torch::manual_seed(4);
  // A stream with structure to learn: token t+1 = (3·token t + 1) mod 13, from random starts.
  auto ids = torch::zeros({9, 4}, torch::kInt64);
  ids[0] = torch::randint(0, 13, {4}, torch::kInt64);
  for (std::int64_t t = 1; t < 9; ++t) ids[t] = (ids[t - 1] * 3 + 1) % 13;
  const auto inputs = ids.slice(0, 0, 8), targets = ids.slice(0, 1);
  for (const auto& head : head_examples()) {
    SCOPED_TRACE(head.dump());
    auto model = transformer_model(head, torch::kFloat32);
    const auto eval_loss = [&] {
      model->eval();
      torch::NoGradGuard no_grad;
      const auto loss = model->loss(inputs, targets, model->init_hidden(4)).loss.item<double>();
      model->train();
      return loss;
    };
    const double before = eval_loss();
    torch::optim::Adam adam(model->parameters(), torch::optim::AdamOptions(1e-2));
    for (int step = 0; step < 25; ++step) {
      adam.zero_grad();
      auto out = model->loss(inputs, targets, model->init_hidden(4));
      (out.loss + out.ar + out.tar).backward();
      adam.step();
    }
    const double after = eval_loss();
    EXPECT_LT(after, before - 0.3) << "before " << before << ", after " << after;
  }
}

// Every position sees exactly the `context` tokens up to itself, whatever the windows the stream is
// read in: one token at a time, windows of 3, 12 (longer than the context) or the whole stream at
// once give the same log-probabilities (float64), and each equals the model run on that position's
// own window from an empty state. A full window used to start afresh (0.13 nats off at context 4).
TEST(TransformerModelTest, EveryPositionSeesExactlyItsContextWhateverTheWindows) {
  auto config = transformer_config({{"kind", "softmax"}});
  config["context"] = 4;
  torch::manual_seed(6);
  LanguageModel model(language_model_options_from_json(config));
  model->to(torch::kFloat64);
  model->eval();
  const std::int64_t length = 30, context = 4;
  const auto ids = torch::randint(0, 13, {length, 2}, torch::kInt64);
  torch::NoGradGuard no_grad;
  auto read_in_windows = [&](std::int64_t window) {
    auto state = model->init_hidden(2);
    std::vector<torch::Tensor> parts;
    for (std::int64_t start = 0; start < length; start += window) {
      auto [part, next] = model->log_probs(ids.slice(0, start, std::min(length, start + window)), state);
      parts.push_back(part);
      state = next;
    }
    EXPECT_EQ(state.front().front().size(0), context - 1);  // the last context − 1 tokens
    EXPECT_TRUE(torch::equal(state.front().front(), ids.slice(0, length - (context - 1))));
    return torch::cat(parts, 0);
  };
  const auto one_at_a_time = read_in_windows(1);
  for (const std::int64_t window : {3, 4, 12, 30}) {
    const auto read = read_in_windows(window);
    EXPECT_LT((read - one_at_a_time).abs().max().item<double>(), 1e-12) << "windows of " << window;
  }
  // The definition itself: position t's log P is the model's on tokens max(0, t − 3) … t alone.
  for (std::int64_t t = 0; t < length; ++t) {
    const auto own = ids.slice(0, std::max<std::int64_t>(0, t - (context - 1)), t + 1);
    const auto expected = model->log_probs(own, model->init_hidden(2)).first.slice(0, (own.size(0) - 1) * 2);
    const auto got = one_at_a_time.slice(0, t * 2, (t + 1) * 2);
    EXPECT_LT((got - expected).abs().max().item<double>(), 1e-12) << "position " << t;
  }
}

class TransformerCheckpointTest : public testing::TemporaryFolderTest {
 protected:
  TransformerCheckpointTest() : TemporaryFolderTest("lmkit_transformer_checkpoint_") {}
};

TEST_F(TransformerCheckpointTest, SavedAndLoadedExactly) {
  std::filesystem::create_directories(root_);
  for (const std::string positions : {"learned", "sinusoidal"}) {
    auto config = transformer_config({{"kind", "gss"}, {"c", -1.0}, {"k", 2.0}});
    config["positions"] = positions;
    torch::manual_seed(8);
    LanguageModel model(language_model_options_from_json(config));
    model->eval();
    const auto path = dir(positions + ".ckpt");
    save_checkpoint(model, path);
    auto back = load_checkpoint(path).model;
    back->eval();
    EXPECT_EQ(to_json(back->options), to_json(model->options));
    const auto ids = torch::randint(0, 13, {7, 3}, torch::kInt64);
    EXPECT_TRUE(torch::equal(log_probs_of(back, ids), log_probs_of(model, ids)));
  }
}

TEST(TransformerModelTest, ParametersCountByPartsAsTheClosedForm) {
  auto model = transformer_model({{"kind", "softmax"}});
  const auto parts = model->parameter_count();
  const std::int64_t d = 8, ff = 12, N = 13, context = 10, layers = 2;
  EXPECT_EQ(parts.at("embedding"), N * d);
  EXPECT_EQ(parts.at("transformer"), context * d + layers * (4 * d * d + 2 * d * ff + 9 * d + ff) + 2 * d);
  EXPECT_EQ(parts.at("decoder"), N);  // tied: the bias alone
  EXPECT_EQ(parts.at("total"), parts.at("embedding") + parts.at("transformer") + N);
  EXPECT_EQ(parts.count("lstm"), 0u);
  // MoS projects h (emb) to K latent contexts of emb: K·emb·emb + K·emb + K·emb.
  auto mos = transformer_model({{"kind", "mos"}, {"K", 3}});
  EXPECT_EQ(mos->parameter_count().at("head"), 3 * 8 * 8 + 3 * 8 + 3 * 8);
}

TEST(TransformerModelTest, TheConfigNamesItsEncoderAndRefusesTheOthersOptions) {
  const auto options = language_model_options_from_json(transformer_config({{"kind", "softmax"}}));
  const auto json = to_json(options);
  EXPECT_EQ(json.at("encoder"), "transformer");
  // AR and TAR are the AWD-LSTM's: a Transformer's config has neither, and refuses them, except
  // the alpha = beta = 0 that configs written before said so carry (dropped as they are read).
  EXPECT_FALSE(json.contains("alpha") || json.contains("beta") || json.contains("nhid"));
  auto written_before = json;
  written_before["alpha"] = 0.0;
  written_before["beta"] = 0.0;
  EXPECT_EQ(to_json(language_model_options_from_json(written_before)), json);
  auto with_ar = json;
  with_ar["alpha"] = 2.0;
  EXPECT_TRUE(contains(failure([&] { language_model_options_from_json(with_ar); }), "'alpha' = 2.0 is no longer a Transformer option"));
  EXPECT_EQ(without_retired_options(written_before), json);
  EXPECT_EQ(without_retired_options(with_ar), with_ar);
  EXPECT_EQ(to_json(language_model_options_from_json(json)), json);
  // An AWD-LSTM config is unchanged: no "encoder" key.
  EXPECT_FALSE(to_json(LanguageModelOptions()).contains("encoder"));

  auto with_nhid = transformer_config({{"kind", "softmax"}});
  with_nhid["nhid"] = 10;
  EXPECT_TRUE(contains(failure([&] { language_model_options_from_json(with_nhid); }), "'nhid' is an AWD-LSTM option"));
  nlohmann::json lstm_with_heads = {{"vocab_size", 10}, {"heads", 2}};
  EXPECT_TRUE(contains(failure([&] { language_model_options_from_json(lstm_with_heads); }), "set encoder = \"transformer\""));
  nlohmann::json unknown_encoder = {{"vocab_size", 10}, {"encoder", "gru"}};
  // Every registered kind is named (this test binary registers a test-only one between them).
  const auto unknown = failure([&] { language_model_options_from_json(unknown_encoder); });
  EXPECT_TRUE(contains(unknown, "model option 'encoder' must be \"awd-lstm\", ") && contains(unknown, " or \"transformer\", got \"gru\""))
      << unknown;
  nlohmann::json misspelt_encoder = {{"vocab_size", 10}, {"encoder", "transfomer"}};
  EXPECT_TRUE(contains(failure([&] { language_model_options_from_json(misspelt_encoder); }), "(did you mean \"transformer\"?)"));
  auto zero_context = transformer_config({{"kind", "softmax"}});
  zero_context["context"] = 0;
  EXPECT_TRUE(contains(failure([&] { LanguageModel m(language_model_options_from_json(zero_context)); }), "context"));
}

// The rank bound per encoder, in float64: a Softmax head's log P over many contexts has rank d + 2
// on the AWD-LSTM but d + 1 on the Transformer, whose final LayerNorm centres h (its β merging with
// the decoder bias). Both with a non-zero bias and, for the Transformer, LayerNorm gains and shifts
// away from their initial 1 and 0; hidden_size recovers d from each with the encoder's declaration.
TEST(TransformerModelTest, ASoftmaxHeadsRankBoundIsDPlusOneAfterTheFinalLayerNormAndDPlusTwoOnTheAwdLstm) {
  const std::int64_t d = 8, words = 60;
  torch::manual_seed(23);
  auto transformer_options = transformer_config({{"kind", "softmax"}});
  transformer_options["vocab_size"] = words;
  transformer_options["context"] = 16;
  LanguageModel transformer(language_model_options_from_json(transformer_options));
  const nlohmann::json awd_options = {{"vocab_size", words}, {"emb", d}, {"nhid", 16}, {"nhidlast", d}, {"nlayers", 2},
                                      {"dropout", 0.0}, {"dropouth", 0.0}, {"dropouti", 0.0}, {"dropoute", 0.0},
                                      {"wdrop", 0.0}, {"head", {{"kind", "softmax"}}}};
  LanguageModel awd(language_model_options_from_json(awd_options));
  EXPECT_TRUE(transformer->output_is_centred());
  EXPECT_FALSE(awd->output_is_centred());
  {
    torch::NoGradGuard no_grad;
    transformer->encoder_as<TransformerEncoderImpl>().final_norm->weight.uniform_(0.5, 1.5);
    transformer->encoder_as<TransformerEncoderImpl>().final_norm->bias.normal_(0, 0.5);
    for (auto* model : {&transformer, &awd}) (*model)->decoder_bias.normal_(0, 0.5);
  }
  const auto ids = torch::randint(0, words, {16, 20}, torch::kInt64);  // 320 contexts > 60 words
  const std::vector<std::pair<LanguageModel*, std::int64_t>> cases{{&transformer, d + 1}, {&awd, d + 2}};
  for (const auto& [model, bound] : cases) {
    (*model)->to(torch::kFloat64);
    (*model)->eval();
    const auto q = log_probs_of(*model, ids);
    const auto sv = torch::linalg_svdvals(q);
    const auto facts = analysis::RankBoundFacts{true, (*model)->output_is_centred()};
    EXPECT_EQ(d + analysis::logp_rank_offset(facts), bound);
    EXPECT_EQ(analysis::press_rank(sv, q.size(0), q.size(1), torch::kFloat64), bound) << (*model)->options.encoder_kind();
    // A real gap: σ_bound far above float64's noise, σ_bound+1 at it.
    EXPECT_GT(sv[bound - 1].item<double>() / sv[0].item<double>(), 1e-8);
    EXPECT_LT(sv[bound].item<double>() / sv[0].item<double>(), 1e-12);
    analysis::HiddenSizeOptions options;
    options.centred = (*model)->output_is_centred();
    EXPECT_EQ(analysis::estimate_hidden_size(sv, options).hidden_size, d) << (*model)->options.encoder_kind();
  }
  // Read without the encoder's declaration, a Transformer's d comes out one too small.
  const auto q = log_probs_of(transformer, ids);
  EXPECT_EQ(analysis::estimate_hidden_size(torch::linalg_svdvals(q)).hidden_size, d - 1);
}

}  // namespace
}  // namespace lmkit
