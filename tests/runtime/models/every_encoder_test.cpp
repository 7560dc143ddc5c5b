// Every registered encoder (its registered examples, encoder_registry.h), whichever file registered
// it, under every registered head: normalized log-probabilities, a loss that is their mean NLL, a
// gradient that reaches the embedding, a state that carries a stream across windows, causality, the
// parameter count by parts, and save/load. A new encoder passes these before it is used.
#include <gtest/gtest.h>

#include <set>
#include <string>

#include "runtime/heads/head_registry.h"
#include "runtime/models/checkpoint.h"
#include "runtime/models/encoder_registry.h"
#include "runtime/models/language_model.h"
#include "tests/support/temporary_folder.h"

namespace lmkit {
namespace {

constexpr std::int64_t kWords = 20;

// The example as a model in evaluation mode (float64 unless said), with `head`.
LanguageModel example_model(nlohmann::json example, const nlohmann::json& head, torch::Dtype dtype = torch::kFloat64) {
  example["vocab_size"] = kWords;
  example["head"] = head;
  LanguageModel model(language_model_options_from_json(example));
  model->to(dtype);
  model->eval();
  return model;
}

// A head config as a model takes it (PLIF's K small enough for 20 words' logits to cross knots).
std::vector<nlohmann::json> heads() {
  auto configs = head_examples();
  for (auto& config : configs) {
    if (config["kind"] == "plif") config["K"] = 20;
  }
  return configs;
}

TEST(EveryEncoderTest, EveryRegisteredKindIsInTheEveryEncoderTests) {
  std::set<std::string> tested;
  for (const auto& example : encoder_examples()) tested.insert(example["encoder"].get<std::string>());
  for (const auto& kind : encoder_kinds()) EXPECT_TRUE(tested.count(kind)) << kind << ": missing from encoder_examples()";
  EXPECT_TRUE(tested.count("awd-lstm") && tested.count("transformer"));
}

TEST(EveryEncoderTest, EveryHeadOnEveryEncoderNormalizesAndItsLossIsTheMeanNll) {
  torch::manual_seed(31);
  const auto ids = torch::randint(kWords, {5, 3}, torch::kInt64);
  const auto targets = torch::randint(kWords, {5, 3}, torch::kInt64);
  for (const auto& example : encoder_examples()) {
    for (const auto& head : heads()) {
      SCOPED_TRACE(example.dump() + " " + head.dump());
      auto model = example_model(example, head);
      auto [logp, state] = model->log_probs(ids, model->init_hidden(3));
      ASSERT_EQ(logp.sizes(), (std::vector<std::int64_t>{15, kWords}));
      EXPECT_LT((logp.exp().sum(1) - 1).abs().max().item<double>(), 1e-9);
      auto out = model->loss(ids, targets, model->init_hidden(3));
      EXPECT_NEAR(out.loss.item<double>(), -logp.gather(1, targets.reshape({-1, 1})).mean().item<double>(), 1e-9);
      EXPECT_TRUE(std::isfinite(out.ar.item<double>()) && std::isfinite(out.tar.item<double>()));
      model->train();
      auto trained = model->loss(ids, targets, model->init_hidden(3));
      (trained.loss + trained.ar + trained.tar).backward();
      ASSERT_TRUE(model->embedding().grad().defined());
      EXPECT_GT(model->embedding().grad().abs().sum().item<double>(), 0);
    }
  }
}

TEST(EveryEncoderTest, EveryEncoderCarriesAStreamAcrossWindowsAndLooksOnlyBack) {
  torch::manual_seed(32);
  const auto ids = torch::randint(kWords, {9, 2}, torch::kInt64);
  for (const auto& example : encoder_examples()) {
    SCOPED_TRACE(example.dump());
    auto model = example_model(example, {{"kind", "softmax"}});
    EXPECT_EQ(model->encoder->kind(), example["encoder"]);  // the class says the kind it is registered as
    torch::NoGradGuard no_grad;
    const auto whole = model->log_probs(ids, model->init_hidden(2)).first;
    auto state = model->init_hidden(2);
    std::vector<torch::Tensor> parts;
    for (std::int64_t start = 0; start < ids.size(0); start += 4) {
      auto [part, next] = model->log_probs(ids.slice(0, start, std::min<std::int64_t>(start + 4, ids.size(0))), state);
      parts.push_back(part);
      state = detach_state(next);
    }
    EXPECT_TRUE(torch::allclose(torch::cat(parts), whole, 1e-10, 1e-10));
    // Position t's log-probabilities do not depend on the tokens after it.
    auto changed = ids.clone();
    changed.slice(0, 5).random_(kWords);
    const auto other = model->log_probs(changed, model->init_hidden(2)).first;
    EXPECT_TRUE(torch::allclose(other.slice(0, 0, 5 * 2), whole.slice(0, 0, 5 * 2), 1e-12, 1e-12));
  }
}

TEST(EveryEncoderTest, EveryEncodersParametersCountByPart) {
  for (const auto* kind : registered_encoder_kinds()) {
    SCOPED_TRACE(kind->kind);
    auto example = kind->examples.empty() ? nlohmann::json::object() : kind->examples.front();
    example["encoder"] = kind->kind;
    auto model = example_model(example, {{"kind", "softmax"}});
    const auto parts = model->parameter_count();
    std::int64_t total = 0;
    for (const auto& p : model->parameters()) total += p.numel();
    EXPECT_EQ(parts.at("total"), total);
    EXPECT_EQ(parts.at("embedding"), model->embedding().numel());
    EXPECT_EQ(parts.at("embedding") + parts.at(kind->names.parameter_part) + parts.at("decoder") + parts.at("head"), total);
    EXPECT_EQ(model->vocab_size(), kWords);
  }
}

class EveryEncoderCheckpointTest : public testing::TemporaryFolderTest {
 protected:
  EveryEncoderCheckpointTest() : TemporaryFolderTest("lmkit_every_encoder_", /*create=*/true) {}
};

TEST_F(EveryEncoderCheckpointTest, EveryEncoderRoundTripsThroughACheckpoint) {
  torch::manual_seed(33);
  const auto ids = torch::randint(kWords, {6, 2}, torch::kInt64);
  for (const auto& example : encoder_examples()) {
    SCOPED_TRACE(example.dump());
    auto model = example_model(example, {{"kind", "mos"}, {"K", 2}}, torch::kFloat32);
    const auto path = dir(example["encoder"].get<std::string>() + ".ckpt");
    save_checkpoint(model, path);
    auto loaded = load_checkpoint(path).model;
    loaded->eval();
    EXPECT_EQ(to_json(loaded->options), to_json(model->options));
    EXPECT_EQ(loaded->encoder->kind(), model->encoder->kind());
    torch::NoGradGuard no_grad;
    EXPECT_TRUE(torch::equal(loaded->log_probs(ids, loaded->init_hidden(2)).first,
                             model->log_probs(ids, model->init_hidden(2)).first));
  }
}

}  // namespace
}  // namespace lmkit
