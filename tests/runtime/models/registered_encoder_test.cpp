// Adding an encoder takes one file: this test-only encoder (an Elman RNN) is declared here and
// nowhere else (the build compiles every *_test.cpp), and the model config's "encoder", lmkit.model
// with its doc, the every-encoder tests (every_encoder_test.cpp: every head on it, its state, its
// parameter count, save/load), lmkit.train, the analyses and `lmkit doctor`'s smoke setups all pick
// it up.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>

#include "bindings/lua_module.h"
#include "repl/lua_state_handle.h"
#include "runtime/core/error.h"
#include "runtime/models/encoder_registry.h"
#include "runtime/models/language_model.h"
#include "runtime/training/device_smoke_test.h"
#include "tests/support/failure_text.h"
#include "tests/support/temporary_folder.h"

namespace lmkit {
namespace {

// h_t = tanh(W x_t + U h_{t−1} + b), x_t = E[id_t]: the smallest recurrent encoder with an option.
struct ElmanOptions {
  std::int64_t vocab_size = 10000;
  std::int64_t emb = 8;
  double init_scale = 1.0;
};
const config::BoundOptions<ElmanOptions>& declared_options(config::Tag<ElmanOptions>) {
  using O = ElmanOptions;
  using config::Range;
  static const config::BoundOptions<O> options(
      "Elman RNN", {{"vocab_size", &O::vocab_size, Range::positive(), "vocabulary size N"},
                    {"emb", &O::emb, Range::positive(), "width of the embeddings, the state and the output"},
                    {"init_scale", &O::init_scale, Range::positive(), "W and U start U(−s/√emb, s/√emb)"}});
  return options;
}
const char* encoder_kind_of(config::Tag<ElmanOptions>) { return "test_elman"; }
EncoderWidths encoder_widths(const ElmanOptions& o) { return {o.vocab_size, o.emb, o.emb}; }

class ElmanEncoderImpl : public EncoderImpl {
 public:
  explicit ElmanEncoderImpl(ElmanOptions o) : options(o) {
    const double bound = o.init_scale / std::sqrt(static_cast<double>(o.emb));
    embedding_weight = register_parameter("embedding", torch::empty({o.vocab_size, o.emb}).uniform_(-0.1, 0.1));
    w_in = register_parameter("w_in", torch::empty({o.emb, o.emb}).uniform_(-bound, bound));
    w_rec = register_parameter("w_rec", torch::empty({o.emb, o.emb}).uniform_(-bound, bound));
    bias = register_parameter("bias", torch::zeros({o.emb}));
  }
  std::string kind() const override { return "test_elman"; }
  nlohmann::json config() const override { return declared_options(config::Tag<ElmanOptions>{}).to_json(options); }
  EncoderOutput encode(const torch::Tensor& ids, const EncoderState& state) override {
    if (state.size() != 1 || state.front().size() != 1) throw UsageError("an Elman RNN's state is {{h}}");
    auto x = torch::embedding(embedding_weight, ids);  // [T, B, emb]
    auto h = state.front().front();
    std::vector<torch::Tensor> outputs;
    for (std::int64_t t = 0; t < ids.size(0); ++t) {
      h = torch::tanh(torch::addmm(bias, x[t], w_in.t()) + h.mm(w_rec.t()));
      outputs.push_back(h);
    }
    auto out = torch::stack(outputs);
    return {out, out, {{h}}};
  }
  EncoderState initial_state(std::int64_t batch_size) const override {
    return {{torch::zeros({batch_size, options.emb}, embedding_weight.options().requires_grad(false))}};
  }
  const torch::Tensor& embedding() const override { return embedding_weight; }
  std::int64_t output_width() const override { return options.emb; }

  ElmanOptions options;
  torch::Tensor embedding_weight, w_in, w_rec, bias;
};

}  // namespace
}  // namespace lmkit

LMKIT_REGISTER_ENCODER(test_elman) {
  return lmkit::declared_encoder_kind<lmkit::ElmanEncoderImpl, lmkit::ElmanOptions>(
      "Elman RNN", "h_t = tanh(W x_t + U h_{t−1} + b) (a test-only encoder)",
      lmkit::EncoderCapabilities{/*bounded_output=*/true, /*centred_output=*/false, /*separate_windows=*/false},
      {"encoder", "elman", "emb"}, {{{"emb", 6}, {"init_scale", 0.9}}}, {{{"emb", 16}}, 1.0});
}

namespace lmkit {
namespace {

using testing::contains;
using testing::failure;

TEST(RegisteredEncoderTest, TheModelConfigNamesItAndChecksItsOptionsByItsDeclaration) {
  const auto kinds = encoder_kinds();
  EXPECT_NE(std::find(kinds.begin(), kinds.end(), "test_elman"), kinds.end());
  const nlohmann::json config{{"encoder", "test_elman"}, {"vocab_size", 9}, {"emb", 4}, {"init_scale", 0.5}};
  const auto options = language_model_options_from_json(config);
  EXPECT_EQ(encoder_output_width(options), 4);
  LanguageModel model(options);
  EXPECT_EQ(model->encoder->kind(), "test_elman");
  EXPECT_EQ(model->encoder_title(), "Elman RNN");
  const auto json = to_json(model->options);
  EXPECT_EQ(json.at("encoder"), "test_elman");
  EXPECT_EQ(json.at("init_scale"), 0.5);
  EXPECT_EQ(to_json(language_model_options_from_json(json)), json);

  auto misspelt = config;
  misspelt["init_scal"] = 1;
  EXPECT_TRUE(contains(failure([&] { language_model_options_from_json(misspelt); }), "did you mean 'init_scale'"));
  auto lstm_option = config;
  lstm_option["nhid"] = 10;
  EXPECT_TRUE(contains(failure([&] { language_model_options_from_json(lstm_option); }),
                       "'nhid' is an AWD-LSTM option (set encoder = \"awd-lstm\"); the Elman RNN's are: vocab_size, emb, init_scale"));
  auto negative = config;
  negative["init_scale"] = -1;
  EXPECT_TRUE(contains(failure([&] { language_model_options_from_json(negative); }), "Elman RNN option 'init_scale' must be positive, got -1"));
  EXPECT_TRUE(contains(failure([&] { language_model_options_from_json({{"encoder", "test_elmann"}}); }),
                       "(did you mean \"test_elman\"?)"));
}

TEST(RegisteredEncoderTest, ItsParametersCountInAPartOfItsOwnAndItsCapabilitiesReachTheModel) {
  LanguageModel model(language_model_options_from_json({{"encoder", "test_elman"}, {"vocab_size", 9}, {"emb", 4}}));
  const auto parts = model->parameter_count();
  EXPECT_EQ(parts.at("embedding"), 9 * 4);
  EXPECT_EQ(parts.at("elman"), 2 * 4 * 4 + 4);
  EXPECT_EQ(parts.at("decoder"), 9);  // tied: its bias
  EXPECT_EQ(parts.at("total"), 9 * 4 + 2 * 4 * 4 + 4 + 9);
  EXPECT_FALSE(model->output_is_centred());
  EXPECT_TRUE(model->encoder->capabilities().bounded_output);
  EXPECT_EQ(model->encoder->longest_window(), 0);
  EXPECT_TRUE(contains(failure([&] { model->encoder->reference_entries(false); }), "this model's encoder is an Elman RNN"));
}

TEST(RegisteredEncoderTest, LmkitDoctorsSmokeSetupsTrainIt) {
  const auto setups = training::default_smoke_setups();
  const auto it = std::find_if(setups.begin(), setups.end(), [](const auto& s) { return s.name == "test_elman+softmax"; });
  ASSERT_NE(it, setups.end());
  EXPECT_EQ(it->encoder.at("encoder"), "test_elman");
  EXPECT_EQ(it->lr, 1.0);
}

// From Lua, with no other file edited: lmkit.model with its doc, lmkit.train (the trainer's default
// protocol: the encoder declares none of its own), the saved best model, and the analyses.
class RegisteredEncoderTrainingTest : public testing::TemporaryFolderTest {
 protected:
  RegisteredEncoderTrainingTest() : TemporaryFolderTest("lmkit_registered_encoder_") {}
};

TEST_F(RegisteredEncoderTrainingTest, LuaBuildsTrainsAndAnalysesIt) {
  repl::LuaStateHandle state(lua::new_lmkit_state());
  lua_State* L = state.get();
  const std::string code =
      "local _, doc = lmkit.doc(lmkit.model)\n"
      "assert(doc:find('Elman RNN (encoder = \"test_elman\"): h_t = tanh', 1, true), doc)\n"
      "assert(doc:find('init_scale (number > 0, default 1): W and U start', 1, true), doc)\n"
      "lmkit.seed(3)\n"
      "local lang = lmkit.data.synthetic{vocab = 20, states = 6, dim = 3, seed = 7}\n"
      "local corpus = lang:corpus{train = 1200, valid = 300, test = 300}\n"
      "local m = lmkit.model{encoder = 'test_elman', vocab_size = 20, emb = 6}\n"
      "local run = lmkit.train{model = m, corpus = corpus, run_dir = '" + dir("run") + "', lr = 1, epochs = 2, batch_size = 4, bptt = 10,\n"
      "                        eval_batch_size = 4, test_batch_size = 2, seed = 5}\n"
      "local s = run:summary()\n"
      "assert(s.status == 'finished', s.status)\n"
      "assert(s.test_ppl < 20, 'it learnt nothing: test ppl ' .. s.test_ppl)\n"
      "local best = run:best_model()\n"
      "assert(best:config():find('\"encoder\":\"test_elman\"', 1, true), best:config())\n"
      "local tokens = lang:generate(200)\n"
      "local q = lmkit.analysis.logp_matrix(best, tokens)\n"
      "assert(q:size(1) == 199 and q:size(2) == 20)\n"
      "local sv, rows, cols = lmkit.analysis.logp_svdvals(best, tokens, {dtype = 'float64'})\n"
      "assert(lmkit.analysis.press_rank(sv, rows, cols) <= 6 + 2)\n"
      "local a = lmkit.analysis.model_argmaxable(best)\n"
      "assert(a.words == 20 and a.method == 'lp', a.method)\n";
  ASSERT_EQ(luaL_dostring(L, code.c_str()), LUA_OK) << lua_tostring(L, -1);
}

}  // namespace
}  // namespace lmkit
