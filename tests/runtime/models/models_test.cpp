// The AWD-LSTM encoder, every head and checkpoints: parameter counts from the papers,
// equivalences between heads, rank structure, normalization, gradients, save/load.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <set>

#include "ops/plif.h"
#include "runtime/core/error.h"
#include "runtime/heads/gss_head.h"
#include "runtime/heads/head_registry.h"
#include "runtime/heads/moc_head.h"
#include "runtime/heads/mos_head.h"
#include "runtime/heads/plif_head.h"
#include "runtime/heads/softmax_head.h"
#include "runtime/models/checkpoint.h"
#include "ops/dropout.h"
#include "runtime/models/awd_lstm.h"
#include "runtime/models/language_model.h"
#include "tests/support/gradcheck.h"

namespace lmkit {
namespace {

using lmkit::testing::gradient_error;
const auto kDouble = torch::TensorOptions().dtype(torch::kFloat64);

LanguageModelOptions sizes(int64_t N, int64_t emb, int64_t nhid, int64_t nhidlast, nlohmann::json head) {
  LanguageModelOptions o;
  o.encoder(AwdLstmOptions().vocab_size(N).emb(emb).nhid(nhid).nhidlast(nhidlast)).head(std::move(head));
  return o;
}

int64_t total(const LanguageModelOptions& o) { return LanguageModel(o)->parameter_count().at("total"); }

// --- parameter counts (thesis Tables 4.8, 4.9, 5.6, 5.18; SPEC §1) --------------------------------
TEST(ParameterCountTest, PtbSoftmaxByPart) {
  auto counts = LanguageModel(sizes(10000, 400, 1150, 400, {{"kind", "softmax"}}))->parameter_count();
  EXPECT_EQ(counts.at("embedding"), 4000000);
  EXPECT_EQ(counts.at("decoder"), 10000);
  EXPECT_EQ(counts.at("lstm"), 7139200 + 10589200 + 2483200);
  EXPECT_EQ(counts.at("head"), 0);
  EXPECT_EQ(counts.at("total"), 24221600);
}

TEST(ParameterCountTest, PtbPlifAddsK) {
  auto counts = LanguageModel(sizes(10000, 400, 1150, 400, {{"kind", "plif"}, {"K", 100000}}))->parameter_count();
  EXPECT_EQ(counts.at("head"), 100000);
  EXPECT_EQ(counts.at("total"), 24321600);
  // Frozen slopes are still parameters of the model (LMS-PLIF†).
  EXPECT_EQ(total(sizes(10000, 400, 1150, 400, {{"kind", "plif"}, {"freeze", true}})), 24321600);
}

TEST(ParameterCountTest, PtbMos) {
  auto counts = LanguageModel(sizes(10000, 280, 960, 620, {{"kind", "mos"}, {"K", 15}}))->parameter_count();
  EXPECT_EQ(counts.at("head"), 620 * 15 * 280 + 15 * 280 + 620 * 15);
  EXPECT_EQ(counts.at("total"), 21500620);
}

// The thesis prints millions truncated to two decimals.
double millions(int64_t n) { return std::floor(static_cast<double>(n) / 1e4) / 100; }

TEST(ParameterCountTest, Wt2AndFairComparisonModels) {
  EXPECT_EQ(millions(total(sizes(33278, 400, 1150, 400, {{"kind", "softmax"}}))), 33.55);        // WT2 Softmax
  EXPECT_EQ(millions(total(sizes(33278, 300, 1150, 650, {{"kind", "mos"}, {"K", 15}}))), 34.90); // WT2 MoS
  EXPECT_EQ(millions(total(sizes(10000, 280, 960, 280, {{"kind", "mos"}, {"K", 15}}))), 17.53);  // MoS† d'=d=280
  EXPECT_EQ(millions(total(sizes(10000, 280, 960, 280, {{"kind", "softmax"}}))), 16.35);         // Softmax† d=280
  EXPECT_EQ(millions(total(sizes(10000, 340, 960, 340, {{"kind", "softmax"}}))), 17.56);         // Softmax‡ d=340
}

TEST(ParameterCountTest, TyingNeedsMatchingWidths) {
  EXPECT_THROW(LanguageModel(sizes(50, 8, 16, 12, {{"kind", "softmax"}})), std::invalid_argument);
  auto untied = sizes(50, 8, 16, 12, {{"kind", "softmax"}});
  untied.tie_weights(false);
  EXPECT_EQ(LanguageModel(untied)->parameter_count().at("decoder"), 50 * 12 + 50);
  EXPECT_THROW(make_head({{"kind", "gss"}, {"q", 1}}, 4, 4), std::invalid_argument);
  EXPECT_THROW(make_head({{"kind", "nope"}}, 4, 4), std::invalid_argument);
}

// --- heads on a random decoder ------------------------------------------------------------------
struct Fixture {
  Decoder decoder;
  torch::Tensor h;  // [T, B, d]
};

Fixture random_fixture(int64_t T, int64_t B, int64_t d, int64_t N, double scale = 1.0) {
  torch::manual_seed(7);
  Fixture f;
  f.decoder.weight = torch::randn({N, d}, kDouble) * scale;
  f.decoder.bias = torch::randn({N}, kDouble) * 0.5;
  f.h = torch::randn({T, B, d}, kDouble);
  return f;
}

Head build(const nlohmann::json& config, int64_t d) {
  auto head = make_head(config, d, d);
  head->to(torch::kFloat64);
  head->eval();
  return head;
}

// Every registered kind's examples (HeadKind::examples), whichever file registered it.
const auto all_heads = head_examples;

TEST(HeadTest, EveryRegisteredKindIsInTheEveryHeadTests) {
  std::set<std::string> tested;
  for (const auto& config : all_heads()) tested.insert(config["kind"].get<std::string>());
  for (const auto& kind : head_kinds()) EXPECT_TRUE(tested.count(kind)) << kind << ": missing from head_examples()";
}

TEST(HeadTest, EveryHeadNormalizesAndNllMatchesLogProbs) {
  auto f = random_fixture(3, 4, 6, 20);
  auto targets = torch::randint(20, {12}, torch::kInt64);
  for (const auto& config : all_heads()) {
    auto head = build(config, 6);
    auto logp = head->log_probs(f.h, f.decoder);
    ASSERT_EQ(logp.sizes(), (std::vector<int64_t>{12, 20})) << config.dump();
    EXPECT_LT((logp.exp().sum(1) - 1).abs().max().item<double>(), 1e-5) << config.dump();
    auto nll = head->nll(f.h, targets, f.decoder);
    EXPECT_TRUE(torch::allclose(nll, -logp.gather(1, targets.view({-1, 1})).squeeze(1), 1e-9, 1e-9)) << config.dump();
    auto [values, ids] = head->top_k(f.h, f.decoder, 3);
    EXPECT_TRUE(torch::equal(values.select(1, 0), std::get<0>(logp.max(1)))) << config.dump();
  }
}

TEST(HeadTest, EveryHeadFiniteForLogitsOfTenThousand) {
  // Decoder rows ±1e4 along one-hot contexts give logits of exactly ±1e4 (tanh latents of the
  // mixtures stay within [−1, 1], so their logits reach ~1e4 too).
  auto f = random_fixture(2, 3, 4, 10);
  f.decoder.weight = torch::sign(f.decoder.weight) * 1e4;
  f.h = torch::eye(4, kDouble).repeat({2, 1}).slice(0, 0, 6).view({2, 3, 4}) * 3;
  auto targets = torch::arange(6, torch::kInt64);
  for (const auto& config : all_heads()) {
    auto head = build(config, 4);
    head->train();  // AdvSoft's perturbed path too
    auto w = f.decoder.weight.clone().requires_grad_();
    auto logp = head->log_probs(f.h, {w, f.decoder.bias});
    EXPECT_TRUE(torch::isfinite(logp).all().item<bool>()) << config.dump();
    EXPECT_LT((torch::logsumexp(logp, 1)).abs().max().item<double>(), 1e-5) << config.dump();
    auto nll = head->nll(f.h, targets, {w, f.decoder.bias});
    EXPECT_TRUE(torch::isfinite(nll).all().item<bool>()) << config.dump();
    nll.sum().backward();
    EXPECT_TRUE(torch::isfinite(w.grad()).all().item<bool>()) << config.dump();
  }
}

TEST(HeadTest, GradientsMatchFiniteDifferences) {
  auto f = random_fixture(2, 2, 3, 7);
  auto targets = torch::randint(7, {4}, torch::kInt64);
  for (const auto& config : all_heads()) {
    auto head = build(config, 3);
    if (config["kind"] == "advsoft") head->train();  // deterministic in training too
    auto h = f.h.clone().requires_grad_();
    auto w = f.decoder.weight.clone().requires_grad_();
    auto b = f.decoder.bias.clone().requires_grad_();
    std::vector<torch::Tensor> inputs{h, w, b};
    for (auto& p : head->parameters()) {
      if (p.requires_grad()) inputs.push_back(p);
    }
    auto nll = [&](const std::vector<torch::Tensor>& in) { return head->nll(in[0], targets, {in[1], in[2]}); };
    // PLIF is piecewise linear: its kinks make finite differences meaningless only at knots,
    // which random logits avoid with probability one at h = 1e-6. AdvSoft's training nll holds
    // its perturbation constant in the backward pass (as the thesis's code does), so it is not the
    // gradient of its own value: HeadTest.AdvSoftReferenceSharesOnePerturbationPerWordHeldConstant
    // differentiates it with the perturbation fixed.
    if (config["kind"] != "advsoft") {
      EXPECT_LT(gradient_error(nll, inputs), 1e-6) << config.dump();
    }
    auto logp = [&](const std::vector<torch::Tensor>& in) { return head->log_probs(in[0], {in[1], in[2]}); };
    EXPECT_LT(gradient_error(logp, inputs), 1e-6) << config.dump();
  }
}

TEST(HeadTest, GssReducesToSigSoftmaxAndSoftmax) {
  auto f = random_fixture(4, 5, 6, 30, 2.0);
  auto ss = build({{"kind", "sigsoftmax"}}, 6)->log_probs(f.h, f.decoder);
  EXPECT_TRUE(torch::allclose(build({{"kind", "gss"}, {"c", 0.0}, {"k", 2.0}}, 6)->log_probs(f.h, f.decoder), ss, 1e-12, 1e-12));
  auto softmax = build({{"kind", "softmax"}}, 6)->log_probs(f.h, f.decoder);
  for (double c : {-2.0, 0.0, 1.5}) {
    EXPECT_TRUE(torch::allclose(build({{"kind", "gss"}, {"c", c}, {"k", 1.0}}, 6)->log_probs(f.h, f.decoder), softmax, 1e-10, 1e-10)) << c;
  }
}

TEST(HeadTest, PlifWithUnitSlopesIsSoftmax) {
  auto f = random_fixture(4, 5, 6, 30, 2.0);
  auto head = build({{"kind", "plif"}, {"K", 40}, {"T", 4.0}, {"sigma", 0.0}}, 6);
  auto softmax = build({{"kind", "softmax"}}, 6)->log_probs(f.h, f.decoder);
  // σ = 0 starts at softplus(log(e − 1)) = 1 up to float32 rounding of v...
  EXPECT_TRUE(torch::allclose(head->log_probs(f.h, f.decoder), softmax, 1e-6, 1e-6));
  auto* plif = head->as<PlifHeadImpl>();
  ASSERT_NE(plif, nullptr);
  {
    torch::NoGradGuard no_grad;
    plif->v.fill_(std::log(std::exp(1.0) - 1.0));  // ...and exactly 1 in float64.
  }
  EXPECT_TRUE(torch::allclose(head->log_probs(f.h, f.decoder), softmax, 1e-10, 1e-10));
  ASSERT_EQ(plif->own_lr_parameters().size(), 1u);
  EXPECT_TRUE(plif->own_lr_parameters()[0].is_same(plif->v));
  EXPECT_TRUE(build({{"kind", "plif"}, {"K", 4}, {"freeze", true}}, 6)->own_lr_parameters().empty());
}

TEST(HeadTest, PlifStartsWithRandomPositiveSlopesAndTrainsThemAtItsOwnRate) {
  // v ~ N(log(e − 1), σ²) with σ = 1 by default (the authors' code): slopes scattered around 1, so
  // that LMS-PLIF† (frozen at initialization) is not Softmax.
  torch::manual_seed(21);
  auto head = build({{"kind", "plif"}, {"K", 20000}, {"T", 4.0}}, 6);
  auto* plif = head->as<PlifHeadImpl>();
  ASSERT_NE(plif, nullptr);
  EXPECT_NEAR(plif->v.mean().item<double>(), std::log(std::exp(1.0) - 1.0), 0.03);
  EXPECT_NEAR(plif->v.std().item<double>(), 1.0, 0.03);
  EXPECT_EQ(plif->own_lr(), 0.02);  // thesis §4.3.2.1
  EXPECT_EQ(build({{"kind", "plif"}, {"K", 4}, {"lr", 0.5}}, 6)->own_lr(), 0.5);
  EXPECT_EQ(build({{"kind", "softmax"}}, 6)->own_lr(), std::nullopt);
  // A config written before lr existed, with its σ recorded, rebuilds as it was.
  auto old = build({{"kind", "plif"}, {"K", 4}, {"T", 1.0}, {"sigma", 0.01}, {"freeze", false}}, 6);
  EXPECT_EQ(old->config().at("sigma"), 0.01);
  EXPECT_EQ(old->config().at("lr"), 0.02);
}

TEST(HeadTest, PlifAuthorsOffsetShiftsTheFLogitsOnly) {
  auto f = random_fixture(4, 5, 6, 30, 3.0);
  torch::manual_seed(5);
  auto ours = build({{"kind", "plif"}, {"K", 40}, {"T", 4.0}}, 6);
  torch::manual_seed(5);
  auto authors = build({{"kind", "plif"}, {"K", 40}, {"T", 4.0}, {"authors_offset", true}}, 6);
  const auto s0 = authors->as<PlifHeadImpl>()->slopes()[0].item<double>();
  const auto shift = authors->f_logits(f.h, f.decoder) - ours->f_logits(f.h, f.decoder);
  EXPECT_NEAR(shift.min().item<double>(), 4.0 * s0, 1e-5);
  EXPECT_NEAR(shift.max().item<double>(), 4.0 * s0, 1e-5);
  // f(−T) = 0 with the authors' offset: a logit of exactly −T maps to 0.
  auto at_minus_t = ops::plif(torch::full({1, 1}, -4.0), authors->as<PlifHeadImpl>()->slopes(), 4.0) + 4.0 * s0;
  EXPECT_NEAR(at_minus_t.item<double>(), 0.0, 1e-6);
  EXPECT_TRUE(torch::allclose(authors->log_probs(f.h, f.decoder), ours->log_probs(f.h, f.decoder), 1e-6, 1e-6));
}

TEST(HeadTest, MosWithOneComponentIsSoftmaxOnTanhProjection) {
  auto f = random_fixture(3, 4, 5, 25);
  auto head = build({{"kind", "mos"}, {"K", 1}}, 5);
  auto* mos = head->as<MosHeadImpl>();
  auto latent = torch::tanh(mos->latent(f.h)).reshape({-1, 5});
  auto expected = torch::log_softmax(f.decoder.logits(latent), 1);
  EXPECT_TRUE(torch::allclose(head->log_probs(f.h, f.decoder), expected, 1e-12, 1e-12));
}

// The MoS code's log(P + floor): in float64 against log of the probabilities plus the floor, for the
// log-probabilities and the loss alike, and for each mixture head; floor 0 is the exact log P.
TEST(HeadTest, AMixtureFloorIsLogOfTheProbabilityPlusTheFloor) {
  auto f = random_fixture(3, 4, 5, 25, 4.0);
  const auto targets = torch::randint(25, {12}, torch::kInt64);
  for (const std::string kind : {"mos", "moss", "moc"}) {
    SCOPED_TRACE(kind);
    torch::manual_seed(11);
    auto exact = build({{"kind", kind}, {"K", 3}}, 5);
    torch::manual_seed(11);
    auto floored = build({{"kind", kind}, {"K", 3}, {"floor", 1e-3}}, 5);
    torch::NoGradGuard no_grad;
    const auto log_p = exact->log_probs(f.h, f.decoder);
    const auto want = torch::log(log_p.exp() + 1e-3);
    // Wide logits put some probabilities far under the floor: the floor changes them by nats.
    EXPECT_GT((want - log_p).max().item<double>(), 1.0);
    EXPECT_TRUE(torch::allclose(floored->log_probs(f.h, f.decoder), want, 1e-10, 1e-10));
    const auto nll = floored->nll(f.h, targets, f.decoder);
    EXPECT_TRUE(torch::allclose(nll, -want.gather(1, targets.reshape({-1, 1})).squeeze(1), 1e-10, 1e-10));
    EXPECT_TRUE(torch::allclose(exact->nll(f.h, targets, f.decoder), -log_p.gather(1, targets.reshape({-1, 1})).squeeze(1),
                                1e-10, 1e-10));
    EXPECT_EQ(floored->config().at("floor"), 1e-3);
    EXPECT_EQ(exact->config().at("floor"), 0.0);
  }
}

// A floor keeps log(P + floor) a log-probability only while N·floor is small: a model whose rows
// would sum to more than 1.01 is refused naming the floor, the vocabulary and the largest floor.
TEST(HeadTest, AMixtureFloorThatUnnormalizesTheRowsIsRefused) {
  for (const std::string kind : {"mos", "moss", "moc"}) {
    SCOPED_TRACE(kind);
    try {
      LanguageModel(sizes(10000, 6, 8, 6, {{"kind", kind}, {"K", 2}, {"floor", 0.5}}));
      ADD_FAILURE() << "floor 0.5 at 10,000 words was accepted";
    } catch (const ConfigError& e) {
      const std::string text = e.what();
      EXPECT_NE(text.find(kind + " head option 'floor' = 0.5 with a vocabulary of 10000 words makes each row of P + floor "
                                 "sum to 1 + N·floor = 5001"),
                std::string::npos)
          << text;
      EXPECT_NE(text.find("Give floor ≤ 1e-06 (N·floor ≤ 0.01), e.g. the MoS code's 1e-8"), std::string::npos) << text;
    }
    // The MoS code's 1e-8 at WikiText-2's vocabulary is accepted; at 100 words the bound is 1e-4.
    EXPECT_NO_THROW(LanguageModel(sizes(33278, 6, 8, 6, {{"kind", kind}, {"K", 2}, {"floor", 1e-8}})));
    EXPECT_NO_THROW(LanguageModel(sizes(100, 6, 8, 6, {{"kind", kind}, {"K", 2}, {"floor", 0.99e-4}})));
    EXPECT_THROW(LanguageModel(sizes(100, 6, 8, 6, {{"kind", kind}, {"K", 2}, {"floor", 1.01e-4}})), ConfigError);
  }
}

TEST(HeadTest, MocAndMosAgreeWhenOnePriorDominates) {
  auto f = random_fixture(3, 4, 5, 25);
  f.h.select(2, 0).fill_(1.0);  // a constant feature the prior can key on
  auto mos = build({{"kind", "mos"}, {"K", 3}}, 5);
  auto moc = build({{"kind", "moc"}, {"K", 3}}, 5);
  torch::NoGradGuard no_grad;
  auto source = mos->named_parameters();
  for (auto& p : moc->named_parameters()) p.value().copy_(source[p.key()]);
  for (auto* head : {mos->as<MosHeadImpl>(), moc->as<MosHeadImpl>()}) {
    head->prior->weight.zero_();
    head->prior->weight[1][0] = 1000.0;  // π_1 ≈ 1
  }
  EXPECT_TRUE(torch::allclose(mos->log_probs(f.h, f.decoder), moc->log_probs(f.h, f.decoder), 1e-9, 1e-9));
  // ...and differ when the priors are mixed.
  for (auto* head : {mos->as<MosHeadImpl>(), moc->as<MosHeadImpl>()}) head->prior->weight.zero_();
  EXPECT_FALSE(torch::allclose(mos->log_probs(f.h, f.decoder), moc->log_probs(f.h, f.decoder), 1e-3, 1e-3));
}

// The two readings of AdvSoft's radius against the closed form of the inner minimum:
// nll = logsumexp(l') − l'_t with l'_t = l_t − ε_t·‖h‖, and ε_t = eps (thesis eq. 3.23) or
// eps·‖e_t‖ where h·e_t > 0, nothing elsewhere (the code behind Tables A.1–A.3).
TEST(HeadTest, AdvSoftPerturbsTheTargetLogitByItsClosedForm) {
  auto f = random_fixture(3, 4, 5, 9, 2.0);
  auto targets = torch::randint(9, {12}, torch::kInt64);
  auto x = f.h.reshape({-1, 5});
  auto l = f.decoder.logits(x);
  auto e = f.decoder.weight.index_select(0, targets);
  auto h_norm = x.norm(2, 1);
  auto aligned = (x * e).sum(1) > 0;
  ASSERT_GT(aligned.sum().item<int64_t>(), 0);
  ASSERT_LT(aligned.sum().item<int64_t>(), 12);  // both kinds of rows
  auto expected_nll = [&](const torch::Tensor& radius) {
    auto target_logit = l.gather(1, targets.view({-1, 1})).squeeze(1) - radius * h_norm;
    auto perturbed = l.scatter(1, targets.view({-1, 1}), target_logit.view({-1, 1}));
    return torch::logsumexp(perturbed, 1) - target_logit;
  };
  // Per token: every row its own perturbation, so h_i·δ_i = −ε_i·‖h_i‖.
  auto fixed = build({{"kind", "advsoft"}, {"eps", 0.3}, {"perturbation", "per_token"}}, 5);
  fixed->train();
  EXPECT_TRUE(torch::allclose(fixed->nll(f.h, targets, f.decoder), expected_nll(torch::full({12}, 0.3, kDouble)), 1e-12, 1e-12));
  auto authors = build({{"kind", "advsoft"}, {"eps", 0.3}, {"relative", true}, {"aligned_only", true},
                        {"perturbation", "per_token"}}, 5);
  authors->train();
  auto radius = 0.3 * e.norm(2, 1) * aligned.to(torch::kFloat64);
  EXPECT_TRUE(torch::allclose(authors->nll(f.h, targets, f.decoder), expected_nll(radius), 1e-12, 1e-12));
  // Evaluation is plain Softmax in both readings.
  authors->eval();
  EXPECT_TRUE(torch::allclose(authors->nll(f.h, targets, f.decoder),
                              -torch::log_softmax(l, 1).gather(1, targets.view({-1, 1})).squeeze(1), 1e-12, 1e-12));
  EXPECT_EQ(authors->config()["relative"], true);
  EXPECT_EQ(authors->config()["aligned_only"], true);
  EXPECT_EQ(fixed->config()["relative"], false);
}

// The reference placement (the thesis's code, the original AdvSoft code): one perturbation per
// word in the batch, written into a noise matrix, so every occurrence of a word gets the δ of one
// occurrence (here its last), δ_j = −ε_j·ĥ_j held constant. Values by a loop over rows; gradients
// in h and in the decoder by central finite differences of the loss with δ fixed.
TEST(HeadTest, AdvSoftReferenceSharesOnePerturbationPerWordHeldConstant) {
  auto f = random_fixture(3, 4, 5, 9, 2.0);
  // Word 2 at rows 1, 6, 12 (1-based; its last: 12), word 7 at rows 4, 5 (last: 5), the rest once.
  const std::vector<int64_t> ids = {2, 1, 3, 7, 7, 2, 0, 4, 5, 6, 8, 2};
  const auto targets = torch::tensor(ids, torch::kInt64);
  const int64_t M = 12;
  auto x = f.h.reshape({M, 5});
  for (const bool authors : {false, true}) {
    nlohmann::json config = {{"kind", "advsoft"}, {"eps", 0.3}};
    if (authors) config["relative"] = true, config["aligned_only"] = true;
    auto head = build(config, 5);
    EXPECT_EQ(head->config()["perturbation"], "reference");
    head->train();
    // δ_j per row, then each row's shared one: a plain loop, independent of the head's tensor code.
    std::vector<torch::Tensor> delta(M);
    for (int64_t j = 0; j < M; ++j) {
      const auto e = f.decoder.weight[ids[j]];
      double radius = 0.3;
      if (authors) radius *= e.norm().item<double>() * ((x[j] * e).sum().item<double>() > 0 ? 1.0 : 0.0);
      delta[j] = -radius * x[j] / x[j].norm();
    }
    std::vector<torch::Tensor> shared(M);
    for (int64_t i = 0; i < M; ++i) {
      int64_t last = i;
      for (int64_t j = 0; j < M; ++j) if (ids[j] == ids[i]) last = j;
      shared[i] = delta[last];
    }
    const auto shared_delta = torch::stack(shared);
    EXPECT_FALSE(torch::allclose(shared_delta[0], delta[0]));  // row 1 takes row 12's δ
    // The loss as a function of (h, W) with δ a constant.
    auto loss_with_constant_delta = [&](const torch::Tensor& h, const torch::Tensor& w) {
      auto l = torch::matmul(h, w.t()) + f.decoder.bias;
      auto target_logit = l.gather(1, targets.view({-1, 1})) + (h * shared_delta).sum(1, true);
      auto perturbed = l.scatter(1, targets.view({-1, 1}), target_logit);
      return torch::logsumexp(perturbed, 1) - target_logit.squeeze(1);
    };
    auto h = x.clone().requires_grad_();
    auto w = f.decoder.weight.clone().requires_grad_();
    auto nll = head->nll(h.view({3, 4, 5}), targets, {w, f.decoder.bias});
    EXPECT_TRUE(torch::allclose(nll, loss_with_constant_delta(x, f.decoder.weight), 1e-12, 1e-12)) << config.dump();
    nll.sum().backward();
    const double step = 1e-6;
    for (auto* variable : {&h, &w}) {
      const auto base = variable->detach().clone();
      auto numeric = torch::zeros_like(base);
      for (int64_t k = 0; k < base.numel(); ++k) {
        auto plus = base.clone(), minus = base.clone();
        plus.view({-1})[k] += step;
        minus.view({-1})[k] -= step;
        const bool is_h = variable == &h;
        const double up = loss_with_constant_delta(is_h ? plus : x, is_h ? f.decoder.weight : plus).sum().item<double>();
        const double down = loss_with_constant_delta(is_h ? minus : x, is_h ? f.decoder.weight : minus).sum().item<double>();
        numeric.view({-1})[k] = (up - down) / (2 * step);
      }
      EXPECT_TRUE(torch::allclose(variable->grad(), numeric, 1e-6, 1e-6))
          << config.dump() << (variable == &h ? " dh" : " dW") << " max error "
          << (variable->grad() - numeric).abs().max().item<double>();
    }
  }
  // Per token, the same finite differences hold with each row's own δ: no gradient through ‖e_t‖.
  auto head = build({{"kind", "advsoft"}, {"eps", 0.3}, {"relative", true}, {"perturbation", "per_token"}}, 5);
  head->train();
  auto w = f.decoder.weight.clone().requires_grad_();
  head->nll(f.h, targets, {w, f.decoder.bias}).sum().backward();
  const auto own_delta = (-0.3 * f.decoder.weight.index_select(0, targets).norm(2, 1, true) * x / x.norm(2, 1, true));
  auto loss_of_w = [&](const torch::Tensor& weight) {
    auto l = torch::matmul(x, weight.t()) + f.decoder.bias;
    auto target_logit = l.gather(1, targets.view({-1, 1})) + (x * own_delta).sum(1, true);
    return (torch::logsumexp(l.scatter(1, targets.view({-1, 1}), target_logit), 1) - target_logit.squeeze(1)).sum();
  };
  auto numeric = torch::zeros_like(f.decoder.weight);
  for (int64_t k = 0; k < numeric.numel(); ++k) {
    auto plus = f.decoder.weight.clone(), minus = f.decoder.weight.clone();
    plus.view({-1})[k] += 1e-6;
    minus.view({-1})[k] -= 1e-6;
    numeric.view({-1})[k] = (loss_of_w(plus).item<double>() - loss_of_w(minus).item<double>()) / 2e-6;
  }
  EXPECT_TRUE(torch::allclose(w.grad(), numeric, 1e-6, 1e-6)) << (w.grad() - numeric).abs().max().item<double>();
  EXPECT_THROW(build({{"kind", "advsoft"}, {"perturbation", "shared"}}, 5), ConfigError);
}

// Press rank in float64: singular values above 0.5·√(m+n+1)·σ_max·eps.
int64_t press_rank(const torch::Tensor& q, torch::Tensor* sv = nullptr) {
  auto s = torch::linalg_svdvals(q.to(torch::kFloat64));
  const double tol = 0.5 * std::sqrt(static_cast<double>(q.size(0) + q.size(1) + 1)) * s[0].item<double>() *
                     std::numeric_limits<double>::epsilon();
  if (sv) *sv = s;
  return (s > tol).sum().item<int64_t>();
}

TEST(RankTest, SoftmaxIsBottleneckedOthersAreNot) {
  const int64_t d = 12, N = 120;
  auto f = random_fixture(40, 50, d, N);  // 2000 contexts
  torch::NoGradGuard no_grad;
  torch::Tensor s;
  auto softmax = build({{"kind", "softmax"}}, d);
  EXPECT_EQ(press_rank(softmax->log_probs(f.h, f.decoder), &s), d + 2);
  // A real gap, not a tolerance accident: σ_{d+2} is far above the noise, σ_{d+3} at it.
  EXPECT_GT(s[d + 1].item<double>() / s[0].item<double>(), 1e-8);
  EXPECT_LT(s[d + 2].item<double>() / s[0].item<double>(), 1e-13);
  Decoder no_bias{f.decoder.weight, torch::Tensor()};
  EXPECT_EQ(press_rank(softmax->log_probs(f.h, no_bias)), d + 1);
  for (const auto& config : {nlohmann::json{{"kind", "sigsoftmax"}}, nlohmann::json{{"kind", "gss"}, {"c", 1.0}, {"k", 1.5}},
                             nlohmann::json{{"kind", "mos"}, {"K", 3}},
                             nlohmann::json{{"kind", "mixtape"}, {"K", 4}, {"S", N}, {"gate_dim", 8}}}) {
    EXPECT_GT(press_rank(build(config, d)->log_probs(f.h, f.decoder)), d + 2) << config.dump();
  }
}

// --- encoder --------------------------------------------------------------------------------------
LanguageModelOptions tiny(nlohmann::json head = {{"kind", "softmax"}}) {
  LanguageModelOptions o;
  o.encoder(AwdLstmOptions().vocab_size(30).emb(8).nhid(12).nhidlast(8).nlayers(3)).head(std::move(head));
  return o;
}

TEST(AwdLstmTest, ShapesAndCarriedState) {
  torch::manual_seed(8);
  LanguageModel model(tiny());
  model->eval();
  auto ids = torch::randint(30, {10, 3}, torch::kInt64);
  auto whole = model->encode(ids, model->init_hidden(3));
  EXPECT_EQ(whole.output.sizes(), (std::vector<int64_t>{10, 3, 8}));
  ASSERT_EQ(whole.state.size(), 3u);
  EXPECT_EQ(whole.state[1][0].sizes(), (std::vector<int64_t>{1, 3, 12}));
  // Two halves with the state carried (and detached) give the same outputs.
  auto first = model->encode(ids.slice(0, 0, 4), model->init_hidden(3));
  auto second = model->encode(ids.slice(0, 4), detach_state(first.state));
  EXPECT_TRUE(torch::allclose(torch::cat({first.output, second.output}), whole.output, 1e-6, 1e-6));
  EXPECT_FALSE(detach_state(first.state)[0][0].requires_grad());
}

TEST(AwdLstmTest, DropoutsAreFreshInTrainingAndOffInEvaluation) {
  torch::manual_seed(9);
  LanguageModel model(tiny());
  auto ids = torch::randint(30, {6, 2}, torch::kInt64);
  model->train();
  auto a = model->encode(ids, model->init_hidden(2)).output;
  auto b = model->encode(ids, model->init_hidden(2)).output;
  EXPECT_FALSE(torch::allclose(a, b));
  model->eval();
  EXPECT_TRUE(torch::equal(model->encode(ids, model->init_hidden(2)).output, model->encode(ids, model->init_hidden(2)).output));
}

TEST(AwdLstmTest, EmbeddingDropoutDropsWholeWordsIncludingTheLast) {
  torch::manual_seed(10);
  auto weight = torch::ones({5, 3});
  auto ids = torch::tensor({4, 4, 4, 1, 1, 0}, torch::kInt64).view({3, 2});
  bool last_dropped = false;
  for (int trial = 0; trial < 50; ++trial) {
    auto out = embedding_dropout(weight, ids, 0.5, true);
    auto flat = out.view({-1, 3});
    for (int64_t i = 0; i < 6; ++i) {
      const double v = flat[i][0].item<double>();
      EXPECT_TRUE(v == 0.0 || v == 2.0);
      EXPECT_TRUE(torch::all(flat[i] == v).item<bool>());  // whole row
    }
    EXPECT_EQ(flat[0][0].item<double>(), flat[2][0].item<double>());  // same word, same mask
    last_dropped |= flat[0][0].item<double>() == 0.0;
  }
  EXPECT_TRUE(last_dropped) << "word N−1 must be droppable (no padding_idx = −1)";
  EXPECT_TRUE(torch::equal(embedding_dropout(weight, ids, 0.5, false), torch::ones({3, 2, 3})));
}

TEST(AwdLstmTest, LockedDropoutSharesTheMaskOverTime) {
  torch::manual_seed(11);
  auto out = locked_dropout(torch::ones({7, 4, 16}), 0.5, true);
  EXPECT_TRUE(torch::equal(out, out[0].expand({7, 4, 16})));
}

TEST(LanguageModelTest, LossIsMeanNllAndRegularizersAreReported) {
  torch::manual_seed(12);
  for (const auto& head : all_heads()) {
    auto o = tiny(head);
    if (head["kind"] == "plif") o.head({{"kind", "plif"}, {"K", 20}});
    LanguageModel model(o);
    model->eval();
    auto ids = torch::randint(30, {5, 2}, torch::kInt64);
    auto targets = torch::randint(30, {5, 2}, torch::kInt64);
    auto out = model->loss(ids, targets, model->init_hidden(2));
    auto [logp, _] = model->log_probs(ids, model->init_hidden(2));
    const double expected = -logp.gather(1, targets.view({-1, 1})).mean().item<double>();
    EXPECT_NEAR(out.loss.item<double>(), expected, 1e-5) << head.dump();
    EXPECT_GT(out.ar.item<double>(), 0);
    EXPECT_GT(out.tar.item<double>(), 0);
    model->train();
    auto trained = model->loss(ids, targets, model->init_hidden(2));
    (trained.loss + trained.ar + trained.tar).backward();
    EXPECT_TRUE(model->embedding().grad().defined()) << head.dump();
  }
}

// --- checkpoints ----------------------------------------------------------------------------------
std::string temp_path(const std::string& name) {
  return (std::filesystem::temp_directory_path() / ("lmkit_models_test_" + name)).string();
}

TEST(CheckpointTest, RoundTripKeepsWeightsAndConfig) {
  torch::manual_seed(13);
  LanguageModel model(tiny({{"kind", "gss"}, {"c", 0.5}, {"k", 1.5}}));
  model->eval();
  const auto path = temp_path("roundtrip.ckpt");
  save_checkpoint(model, path);
  auto loaded = load_checkpoint(path);
  loaded.model->eval();
  EXPECT_EQ(to_json(loaded.model->options), to_json(model->options));
  EXPECT_FALSE(loaded.header.at("lmkit").get<std::string>().empty());
  auto ids = torch::randint(30, {4, 2}, torch::kInt64);
  EXPECT_TRUE(torch::equal(loaded.model->log_probs(ids, loaded.model->init_hidden(2)).first,
                           model->log_probs(ids, model->init_hidden(2)).first));
  EXPECT_FALSE(std::filesystem::exists(path + ".tmp"));
  std::remove(path.c_str());
}

std::string load_error(const std::string& path) {
  try {
    load_checkpoint(path);
  } catch (const std::exception& e) {
    return e.what();
  }
  return "";
}

TEST(CheckpointTest, TruncatedCorruptedAndForeignFilesFailNamingTheFile) {
  LanguageModel model(tiny());
  const auto path = temp_path("damaged.ckpt");
  save_checkpoint(model, path);
  std::string bytes;
  {
    std::ifstream in(path, std::ios::binary);
    bytes.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  auto write = [&](const std::string& content) {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out << content;
  };
  write(bytes.substr(0, bytes.size() / 2));
  auto e = load_error(path);
  EXPECT_NE(e.find(path), std::string::npos) << e;
  EXPECT_NE(e.find("truncated"), std::string::npos) << e;
  auto flipped = bytes;
  flipped[bytes.size() / 2] ^= 0x5a;
  write(flipped);
  e = load_error(path);
  EXPECT_NE(e.find("checksum"), std::string::npos) << e;
  write("#!/bin/sh\necho not a checkpoint\n");
  e = load_error(path);
  EXPECT_NE(e.find("is not an lmkit checkpoint"), std::string::npos) << e;
  EXPECT_NE(e.find(path), std::string::npos) << e;
  std::remove(path.c_str());
  e = load_error(path);
  EXPECT_NE(e.find("cannot open checkpoint '" + path + "'"), std::string::npos) << e;
}

TEST(CheckpointTest, WeightsOfAnotherShapeAreRefusedNamingFileParameterAndShapes) {
  LanguageModel small(tiny());
  const auto path = temp_path("other_shape.ckpt");
  save_checkpoint(small, path);
  auto options = tiny();
  options.encoder_options()["nhid"] = 16;
  LanguageModel wider(options);
  const auto before = wider->embedding().detach().clone();
  try {
    load_weights(wider, path);
    FAIL() << "weights of another shape were loaded";
  } catch (const EnvironmentError& e) {
    const std::string message = e.what();
    EXPECT_NE(message.find("checkpoint '" + path + "': parameter 'encoder."), std::string::npos) << message;
    EXPECT_NE(message.find("is [48, 8] there but [64, 8] in this model"), std::string::npos) << message;
  }
  // Nothing before the mismatch may be left half-loaded in a way that changes shapes.
  for (const auto& p : wider->named_parameters()) EXPECT_TRUE(p.value().defined()) << p.key();
  EXPECT_EQ(wider->embedding().sizes(), before.sizes());
  LanguageModel same(tiny({{"kind", "softmax"}}));
  EXPECT_NO_THROW(load_weights(same, path));
  std::remove(path.c_str());
}

}  // namespace
}  // namespace lmkit
