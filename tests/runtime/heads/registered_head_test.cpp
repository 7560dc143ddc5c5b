// Adding a head kind takes one file: this test-only head is declared here and nowhere else (the
// build compiles every *_test.cpp of this folder), and make_head, head_kinds, the capability lists
// in messages, lmkit.heads.<kind> with its doc string, lmkit.heads.info, lmkit.train, `lmkit heads`
// and the every-head tests of models_test.cpp (normalization, gradients, save/load: they run its
// registered example) all pick it up.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>

#include "bindings/lua_module.h"
#include "repl/head_catalog.h"
#include "repl/lua_state_handle.h"
#include "runtime/core/error.h"
#include "runtime/heads/head_registry.h"
#include "runtime/models/awd_lstm.h"
#include "runtime/models/language_model.h"
#include "tests/support/temporary_folder.h"

namespace lmkit {
namespace {

// log_softmax(a·l): a temperature-scaled Softmax, the smallest head with an option — declared once.
struct ScaledSoftmaxOptions {
  double a = 1.0;
};
const config::BoundOptions<ScaledSoftmaxOptions>& declared_options(config::Tag<ScaledSoftmaxOptions>) {
  static const config::BoundOptions<ScaledSoftmaxOptions> options(
      "test_scaled_softmax", {{"a", &ScaledSoftmaxOptions::a, config::Range::positive(), "the inverse temperature"}});
  return options;
}

class ScaledSoftmaxHeadImpl : public HeadImpl {
 public:
  explicit ScaledSoftmaxHeadImpl(ScaledSoftmaxOptions options) : options_(options) {}
  std::string kind() const override { return "test_scaled_softmax"; }
  nlohmann::json config() const override { return declared_head_config(kind(), options_); }
  torch::Tensor log_probs(const torch::Tensor& h, const Decoder& decoder) override {
    return torch::log_softmax(f_logits(h, decoder), 1);
  }
  torch::Tensor f_logits(const torch::Tensor& h, const Decoder& decoder) override {
    return decoder.logits(rows_of(h)) * options_.a;
  }

 private:
  ScaledSoftmaxOptions options_;
};

}  // namespace

LMKIT_REGISTER_HEAD(test_scaled_softmax) {
  return declared_head_kind<ScaledSoftmaxHeadImpl, ScaledSoftmaxOptions>(
      "test_scaled_softmax", "log_softmax(a·l) (a test-only head).",
      HeadCapabilities{/*projects=*/false, /*pointwise=*/true, /*monotone=*/true}, {{{"a", 1.7}}});
}

namespace {

TEST(RegisteredHeadTest, MakeHeadBuildsTheDeclaredKindWithItsDefaults) {
  const auto kinds = head_kinds();
  EXPECT_NE(std::find(kinds.begin(), kinds.end(), "test_scaled_softmax"), kinds.end());
  EXPECT_TRUE(std::is_sorted(kinds.begin(), kinds.end()));
  torch::manual_seed(3);
  auto h = torch::randn({5, 4}, torch::kDouble);
  Decoder decoder{torch::randn({7, 4}, torch::kDouble), torch::randn({7}, torch::kDouble)};
  auto head = make_head({{"kind", "test_scaled_softmax"}, {"a", 2.5}}, 4, 4);
  auto expected = torch::log_softmax((torch::mm(h, decoder.weight.t()) + decoder.bias) * 2.5, 1);
  EXPECT_TRUE(torch::allclose(head->log_probs(h, decoder), expected, 1e-12, 1e-12));
  EXPECT_EQ(head->config(), (nlohmann::json{{"kind", "test_scaled_softmax"}, {"a", 2.5}}));
  auto by_default = make_head({{"kind", "test_scaled_softmax"}}, 4, 4);
  EXPECT_EQ(by_default->config()["a"], 1.0);
  EXPECT_FALSE(head->projects());
}

std::string config_error(const nlohmann::json& config) {
  try {
    make_head(config, 4, 4);
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(RegisteredHeadTest, ItsOptionsAreCheckedByItsDeclaration) {
  EXPECT_EQ(config_error({{"kind", "test_scaled_softmax"}, {"aa", 2}}),
            "head 'test_scaled_softmax' option 'aa' is unknown (did you mean 'a'?; accepted: a)");
  EXPECT_EQ(config_error({{"kind", "test_scaled_softmax"}, {"a", -1}}),
            "head 'test_scaled_softmax' option 'a' must be positive, got -1");
  EXPECT_EQ(config_error({{"kind", "test_scaled_softmax"}, {"a", "big"}}),
            "head 'test_scaled_softmax' option 'a' must be a number, got \"big\"");
  EXPECT_EQ(config_error({{"kind", "test_scaled_softmx"}}).rfind("unknown head kind 'test_scaled_softmx' (did you mean "
                                                                 "'test_scaled_softmax'?); known: ", 0),
            0u);
}

TEST(RegisteredHeadTest, CapabilityListsInMessagesIncludeIt) {
  EXPECT_NE(head_kinds_with(&HeadCapabilities::pointwise).find("test_scaled_softmax"), std::string::npos);
  EXPECT_EQ(head_kinds_with(&HeadCapabilities::projects), "mixtape, moc, mos, moss");
}

TEST(RegisteredHeadTest, ALanguageModelTrainsWithIt) {
  LanguageModelOptions o;
  o.encoder(AwdLstmOptions().vocab_size(9).emb(4).nhid(5).nhidlast(4).nlayers(1));
  o.head({{"kind", "test_scaled_softmax"}, {"a", 0.5}});
  LanguageModel model(o);
  auto tokens = torch::randint(9, {6, 2}, torch::kInt64);
  auto out = model->loss(tokens.slice(0, 0, 5), tokens.slice(0, 1, 6), model->init_hidden(2));
  out.loss.backward();
  EXPECT_TRUE(std::isfinite(out.loss.item<double>()));
  EXPECT_EQ(model->options.head()["a"], 0.5);
}

TEST(RegisteredHeadTest, LuaGetsItsFunctionDocAndInfo) {
  repl::LuaStateHandle state(lua::new_lmkit_state());
  lua_State* L = state.get();
  const char* code =
      "local spec = lmkit.heads.test_scaled_softmax{a = 3}\n"
      "assert(spec.kind == 'test_scaled_softmax' and spec.a == 3)\n"
      "local ok, err = pcall(lmkit.heads.test_scaled_softmax, {a = 0})\n"
      "assert(not ok and err:find(\"option 'a' must be positive, got 0\", 1, true), err)\n"
      "local info = lmkit.heads.info('test_scaled_softmax')\n"
      "assert(info.pointwise and info.monotone and not info.projects and info.options[1].name == 'a' and info.options[1].default == 1.0)\n"
      "local m = lmkit.model{vocab_size = 9, emb = 4, nhid = 4, nhidlast = 4, nlayers = 1, head = spec}\n"
      "local name, doc = lmkit.doc(lmkit.heads.test_scaled_softmax)\n"
      "assert(name == 'lmkit.heads.test_scaled_softmax', name)\n"
      "assert(doc:find('lmkit.heads.test_scaled_softmax{a=1} -> HeadSpec', 1, true), doc)\n"
      "assert(doc:find('a (number > 0, default 1): the inverse temperature', 1, true), doc)";
  ASSERT_EQ(luaL_dostring(L, code), LUA_OK) << lua_tostring(L, -1);
}

TEST(RegisteredHeadTest, TheEveryHeadTestsRunItsExample) {
  const auto configs = head_examples();
  EXPECT_NE(std::find(configs.begin(), configs.end(), nlohmann::json{{"kind", "test_scaled_softmax"}, {"a", 1.7}}),
            configs.end());
}

TEST(RegisteredHeadTest, LmkitHeadsListsItAndExplainsItsOptions) {
  const auto catalog = repl::head_catalog();
  EXPECT_NE(catalog.find("  test_scaled_softmax{a=1}  [pointwise, monotone]\n      log_softmax(a·l) (a test-only head)."),
            std::string::npos)
      << catalog;
  const auto one = repl::head_catalog("test_scaled_softmax");
  EXPECT_NE(one.find("a (number > 0, default 1): the inverse temperature"), std::string::npos) << one;
  try {
    repl::head_catalog("test_scaled_sofmax");
    ADD_FAILURE() << "an unknown kind was accepted";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("did you mean 'test_scaled_softmax'?"), std::string::npos) << e.what();
  }
}

class RegisteredHeadTrainingTest : public lmkit::testing::TemporaryFolderTest {
 protected:
  RegisteredHeadTrainingTest() : TemporaryFolderTest("lmkit_registered_head_") {}
};

TEST_F(RegisteredHeadTrainingTest, LmkitTrainTrainsIt) {
  repl::LuaStateHandle state(lua::new_lmkit_state());
  lua_State* L = state.get();
  const std::string code =
      "lmkit.seed(5)\n"
      "local lang = lmkit.data.synthetic{vocab = 20, states = 6, dim = 4, seed = 3}\n"
      "local corpus = lang:corpus{train = 3000, valid = 400, test = 400}\n"
      "local model = lmkit.model{vocab_size = 20, emb = 8, nhid = 12, nhidlast = 8, nlayers = 1,\n"
      "                          head = lmkit.heads.test_scaled_softmax{a = 0.8}}\n"
      "local run = lmkit.train{model = model, corpus = corpus, run_dir = '" + dir("run") + "', lr = 5,\n"
      "                        batch_size = 4, bptt = 10, epochs = 2, eval_batch_size = 4, test_batch_size = 2, seed = 7}\n"
      "local s = run:summary()\n"
      "assert(s.status == 'finished', s.status)\n"
      "local epochs = run:metrics('epoch')\n"
      "assert(epochs[2].valid_ppl < epochs[1].valid_ppl, 'the valid ppl did not fall')\n"
      "assert(s.test_ppl < 20, 'test ppl ' .. s.test_ppl .. ' is no better than uniform')\n"
      "assert(run:config().model.head.kind == 'test_scaled_softmax' and run:config().model.head.a == 0.8)";
  ASSERT_EQ(luaL_dostring(L, code.c_str()), LUA_OK) << lua_tostring(L, -1);
}

}  // namespace
}  // namespace lmkit
