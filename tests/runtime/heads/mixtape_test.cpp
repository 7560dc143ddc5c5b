// Mixtape against independent truths: the thesis's K = 4 sigmoid-tree priors written out, the
// naive [M, N, K] formula, Softmax on tanh latents for K = 1, a Mixture of Contexts for S = 0 (low
// rank) against a high rank with every word gated, and the exact parameter count.
#include "runtime/heads/mixtape_head.h"

#include <gtest/gtest.h>

#include "runtime/heads/mos_head.h"
#include "runtime/models/awd_lstm.h"
#include "runtime/models/language_model.h"

namespace lmkit {
namespace {

constexpr auto kDouble = torch::kFloat64;

Head build(nlohmann::json config, int64_t in_dim, int64_t d) {
  config["kind"] = "mixtape";
  auto head = make_head(config, in_dim, d);
  head->to(kDouble);
  head->eval();
  // Non-zero gate biases, so that a wrong row or column shows.
  if (auto* m = head->as<MixtapeHeadImpl>(); m && m->gate_biases.defined()) {
    torch::NoGradGuard no_grad;
    m->gate_biases.normal_();
  }
  return head;
}

// The gate pre-activations a [M, rows, K−1] written out from the parameters.
torch::Tensor pre_activations(MixtapeHeadImpl& m, const torch::Tensor& g, const torch::Tensor& rows) {
  const int64_t gates = m.options.K() - 1, width = m.options.gate_dim();
  auto U = m.gate_latent->weight.reshape({gates, width, -1});  // U_j [gate_dim, in]
  auto a = torch::zeros({g.size(0), rows.numel(), gates}, kDouble);
  for (int64_t j = 0; j < gates; ++j) {
    auto q = torch::tanh(torch::matmul(g, U[j].t()));                         // [M, gate_dim]
    auto v = m.gate_vectors.index_select(0, rows);                            // [rows, gate_dim]
    auto u = torch::matmul(g, m.gate_linear->weight[j]);                      // [M]
    a.select(2, j).copy_(torch::matmul(q, v.t()) + u.unsqueeze(1) + m.gate_biases.index_select(0, rows).select(1, j));
  }
  return a;
}

TEST(MixtapeTest, PriorsAreTheThesisSigmoidTreeForFourComponents) {
  torch::manual_seed(1);
  auto head = build({{"K", 4}, {"S", 5}, {"gate_dim", 3}}, 6, 4);
  auto& m = *head->as<MixtapeHeadImpl>();
  const auto g = torch::randn({7, 6}, kDouble);
  const auto rows = torch::arange(6, torch::kInt64);  // the 5 own rows and the shared one
  torch::NoGradGuard no_grad;
  const auto pi = m.log_priors(g, rows).exp().transpose(1, 2);  // [7, 6 rows, 4]
  const auto gamma = torch::sigmoid(pre_activations(m, g, rows));
  const auto g1 = gamma.select(2, 0), g2 = gamma.select(2, 1), g3 = gamma.select(2, 2);
  EXPECT_TRUE(torch::allclose(pi.select(2, 0), g1 * g2, 1e-12, 1e-14));
  EXPECT_TRUE(torch::allclose(pi.select(2, 1), g1 * (1 - g2), 1e-12, 1e-14));
  EXPECT_TRUE(torch::allclose(pi.select(2, 2), (1 - g1) * g3, 1e-12, 1e-14));
  EXPECT_TRUE(torch::allclose(pi.select(2, 3), (1 - g1) * (1 - g3), 1e-12, 1e-14));
}

TEST(MixtapeTest, PriorsSumToOneForAnyNumberOfLeaves) {
  torch::manual_seed(2);
  for (int64_t K : {2, 3, 5, 8}) {
    auto head = build({{"K", K}, {"S", 2}, {"gate_dim", 2}}, 3, 3);
    torch::NoGradGuard no_grad;
    const auto pi = head->as<MixtapeHeadImpl>()->log_priors(torch::randn({4, 3}, kDouble) * 3,
                                                            torch::arange(3, torch::kInt64)).exp();
    EXPECT_EQ(pi.size(1), K);
    EXPECT_LT((pi.sum(1) - 1).abs().max().item<double>(), 1e-12) << "K = " << K;
    EXPECT_GT(pi.min().item<double>(), 0.0) << "K = " << K;
  }
}

TEST(MixtapeTest, EqualsTheNaiveFormulaForEverySharingThreshold) {
  torch::manual_seed(3);
  const int64_t in = 5, d = 4, N = 10;
  const Decoder decoder{torch::randn({N, d}, kDouble), torch::randn({N}, kDouble)};
  const auto h = torch::randn({2, 3, in}, kDouble);
  for (int64_t S : {0, 3, 10, 25}) {
    auto head = build({{"K", 4}, {"S", S}, {"gate_dim", 3}}, in, d);
    auto& m = *head->as<MixtapeHeadImpl>();
    torch::NoGradGuard no_grad;
    const auto g = h.reshape({-1, in});
    const auto hk = torch::tanh(m.latent(g)).reshape({-1, 4, d});                // [M, K, d]
    const auto logits = torch::matmul(hk, decoder.weight.t());                  // [M, K, N]
    // Word x's gate row: its own below S, the shared row S otherwise.
    const auto rows = torch::clamp_max(torch::arange(N, torch::kInt64), S);
    const auto gamma = torch::sigmoid(pre_activations(m, g, rows));             // [M, N, 3]
    const auto g1 = gamma.select(2, 0), g2 = gamma.select(2, 1), g3 = gamma.select(2, 2);
    const auto pi = torch::stack({g1 * g2, g1 * (1 - g2), (1 - g1) * g3, (1 - g1) * (1 - g3)}, 1);  // [M, K, N]
    const auto expected = torch::log_softmax((pi * logits).sum(1) + decoder.bias, 1);
    EXPECT_TRUE(torch::allclose(head->log_probs(h, decoder), expected, 1e-12, 1e-12)) << "S = " << S;
  }
}

TEST(MixtapeTest, OneComponentIsSoftmaxOnTheTanhLatentAsMosIs) {
  torch::manual_seed(4);
  const Decoder decoder{torch::randn({12, 4}, kDouble), torch::randn({12}, kDouble)};
  const auto h = torch::randn({3, 2, 6}, kDouble);
  auto mixtape = build({{"K", 1}}, 6, 4);
  auto mos = make_head({{"kind", "mos"}, {"K", 1}}, 6, 4);
  mos->to(kDouble);
  mos->eval();
  torch::NoGradGuard no_grad;
  mos->as<MosHeadImpl>()->latent->weight.copy_(mixtape->as<MixtapeHeadImpl>()->latent->weight);
  mos->as<MosHeadImpl>()->latent->bias.copy_(mixtape->as<MixtapeHeadImpl>()->latent->bias);
  EXPECT_TRUE(torch::allclose(mixtape->log_probs(h, decoder), mos->log_probs(h, decoder), 1e-12, 1e-12));
  EXPECT_EQ(mixtape->parameters().size(), 2u);  // W and c only: no gates
}

int64_t rank_of(const torch::Tensor& q) {
  const auto s = torch::linalg_svdvals(q);
  return (s > s[0] * 1e-10).sum().item<int64_t>();
}

TEST(MixtapeTest, SharingEveryGateIsAMixtureOfContextsOfLowRankGatingEveryWordIsNot) {
  torch::manual_seed(5);
  const int64_t in = 6, d = 4, N = 40;
  const Decoder decoder{torch::randn({N, d}, kDouble), torch::randn({N}, kDouble)};
  const auto h = torch::randn({10, 12, in}, kDouble);  // 120 contexts
  torch::NoGradGuard no_grad;
  auto shared = build({{"K", 4}, {"S", 0}, {"gate_dim", 3}}, in, d);
  auto& m = *shared->as<MixtapeHeadImpl>();
  const auto g = h.reshape({-1, in});
  const auto pi = m.log_priors(g, torch::zeros({1}, torch::kInt64)).exp().squeeze(2);  // [M, K]
  const auto context = (torch::tanh(m.latent(g)).reshape({-1, 4, d}) * pi.unsqueeze(2)).sum(1);
  const auto q = shared->log_probs(h, decoder);
  EXPECT_TRUE(torch::allclose(q, torch::log_softmax(decoder.logits(context), 1), 1e-12, 1e-12));
  EXPECT_LE(rank_of(q), d + 2);  // a softmax over d-dimensional contexts, with bias
  auto gated = build({{"K", 4}, {"S", N}, {"gate_dim", 3}}, in, d);
  EXPECT_GT(rank_of(gated->log_probs(h, decoder)), d + 2);  // the bottleneck broken
}

TEST(MixtapeTest, ParameterCountIsExact) {
  // A PTB-sized model: nhidlast 620, emb 280, K 4, S 1000, gate_dim 64.
  LanguageModelOptions o;
  o.encoder(AwdLstmOptions().vocab_size(10000).emb(280).nhid(960).nhidlast(620).nlayers(3))
      .head({{"kind", "mixtape"}, {"K", 4}, {"S", 1000}, {"gate_dim", 64}});
  const auto counts = LanguageModel(o)->parameter_count();
  EXPECT_EQ(counts.at("head"), 4 * 280 * 620 + 4 * 280 + 3 * 64 * 620 + 3 * 620 + 1001 * (64 + 3));
  o.head({{"kind", "mixtape"}, {"K", 1}});
  EXPECT_EQ(LanguageModel(o)->parameter_count().at("head"), 280 * 620 + 280);
}

}  // namespace
}  // namespace lmkit
