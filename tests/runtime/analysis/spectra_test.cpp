// The logP matrix of a model, the streaming SVD, spectra and the thesis's robustness experiments,
// against closed forms and known ranks.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <utility>

#include "runtime/models/awd_lstm.h"
#include "runtime/analysis/hidden_size.h"
#include "runtime/analysis/lapack_svd.h"
#include "runtime/analysis/logp_matrix.h"
#include "runtime/analysis/matrix_rank.h"
#include "runtime/analysis/spectra.h"
#include "runtime/core/device.h"
#include "runtime/core/error.h"

namespace lmkit::analysis {
namespace {

const auto kDouble = torch::TensorOptions().dtype(torch::kFloat64);

// Random weights with a random decoder bias (it starts at 0, which would hide its +1 in the rank)
// and logits of order 1 (so that nonlinear heads are visibly nonlinear).
LanguageModel random_model(nlohmann::json head = {{"kind", "softmax"}}, std::int64_t emb = 6) {
  seed_torch(5);
  LanguageModelOptions o;
  o.encoder(AwdLstmOptions().vocab_size(40).emb(emb).nhid(16).nhidlast(emb).nlayers(2)).head(std::move(head));
  LanguageModel model(o);
  torch::NoGradGuard no_grad;
  model->decoder_bias.normal_();
  model->embedding().mul_(20);
  return model;
}

torch::Tensor random_tokens(std::int64_t n, std::int64_t vocab = 40) {
  seed_torch(9);
  return torch::randint(0, vocab, {n}, torch::kInt64);
}

TEST(LogpMatrixTest, RowsAreTheModelsDistributionsInTokenOrder) {
  auto model = random_model();
  const auto tokens = random_tokens(300);
  LogpMatrixOptions options;
  options.bptt = 7;
  const auto q = logp_matrix(model, tokens, options);
  ASSERT_EQ(q.size(0), 299);
  ASSERT_EQ(q.size(1), 40);
  EXPECT_LT((q.logsumexp(1)).abs().max().item<double>(), 1e-5);
  // One long window over the whole sequence gives the same rows.
  model->eval();
  torch::NoGradGuard no_grad;
  const auto whole = model->log_probs(tokens.narrow(0, 0, 299).unsqueeze(1), model->init_hidden(1)).first;
  EXPECT_TRUE(torch::allclose(q, whole, 1e-5, 1e-5));
  options.max_contexts = 50;
  EXPECT_EQ(logp_matrix(model, tokens, options).size(0), 50);
}

// log_softmax(H·Eᵀ + b) has rank d + 2 (d from H·Eᵀ, one from b, one from the normalizer); the
// f-logits H·Eᵀ + b have rank d + 1. Press rank in float32 sees exactly that on 2000 contexts.
TEST(LogpMatrixTest, SoftmaxRankIsDPlusTwoAndItsLogitsDPlusOne) {
  auto model = random_model();
  const auto tokens = random_tokens(2100);
  LogpMatrixOptions options;
  const auto q = logp_matrix(model, tokens, options);
  ASSERT_GE(q.size(0), 2000);
  EXPECT_EQ(press_rank(svdvals(q), q.size(0), q.size(1)), 6 + 2);
  options.f_logits = true;
  const auto l = logp_matrix(model, tokens, options);
  EXPECT_EQ(press_rank(svdvals(l), l.size(0), l.size(1)), 6 + 1);
}

TEST(LogpMatrixTest, SigSoftmaxBreaksTheRankLimit) {
  auto model = random_model({{"kind", "sigsoftmax"}});
  const auto q = logp_matrix(model, random_tokens(2100), {});
  EXPECT_GT(press_rank(svdvals(q), q.size(0), q.size(1)), 6 + 2);
}

TEST(LogpMatrixTest, MixturesHaveNoFLogits) {
  auto model = random_model({{"kind", "mos"}, {"K", 3}});
  LogpMatrixOptions options;
  options.f_logits = true;
  EXPECT_THROW(logp_matrix(model, random_tokens(100), options), UsageError);
}

TEST(StreamingSvdTest, EqualsTheSvdOfTheWholeMatrix) {
  seed_torch(1);
  const auto a = torch::randn({500, 12}, kDouble).matmul(torch::randn({12, 40}, kDouble)) + 1e-6 * torch::randn({500, 40}, kDouble);
  StreamingSvd streaming(40, torch::kFloat64, torch::kCPU);
  for (std::int64_t start = 0; start < 500; start += 37) streaming.add_rows(a.narrow(0, start, std::min<std::int64_t>(37, 500 - start)));
  EXPECT_EQ(streaming.rows(), 500);
  const auto expected = svdvals(a);
  const auto got = streaming.singular_values();
  EXPECT_LT((got - expected).abs().max().item<double>(), 1e-10 * expected[0].item<double>());
  // The tiny singular values (the 1e−6 noise) survive: no Gram matrix squared them away.
  EXPECT_NEAR(got[20].item<double>() / expected[20].item<double>(), 1.0, 1e-6);
}

TEST(StreamingSvdTest, ModelSpectrumStreamedEqualsDirect) {
  auto model = random_model({{"kind", "sigsoftmax"}});
  const auto tokens = random_tokens(900);
  LogpMatrixOptions options;
  options.dtype = torch::kFloat64;
  const auto direct = svdvals(logp_matrix(model, tokens, options));
  LogpSpectrumOptions spectrum;
  spectrum.method = SpectrumMethod::kStreamingQr;
  spectrum.block_rows = 100;
  const auto streamed = logp_singular_values(model, tokens, options, spectrum);
  EXPECT_EQ(streamed.rows, 899);
  EXPECT_EQ(streamed.cols, 40);
  EXPECT_EQ(streamed.method, SpectrumMethod::kStreamingQr);
  EXPECT_LT((streamed.singular_values - direct).abs().max().item<double>(), 1e-9 * direct[0].item<double>());
  spectrum.method = SpectrumMethod::kSvd;
  const auto whole = logp_singular_values(model, tokens, options, spectrum);
  EXPECT_EQ(whole.method, SpectrumMethod::kSvd);
  EXPECT_NE(whole.description.find("thin SVD of Q"), std::string::npos) << whole.description;
  EXPECT_LT((whole.singular_values - direct).abs().max().item<double>(), 1e-12 * direct[0].item<double>());
}

// A float64 m × n matrix U·diag(σ)·Vᵀ with orthonormal U (m × n) and V (n × n) from a seed.
torch::Tensor with_singular_values(std::int64_t m, const torch::Tensor& sigma, std::uint64_t seed) {
  seed_torch(seed);
  const auto n = sigma.size(0);
  const auto u = std::get<0>(torch::linalg_qr(torch::randn({m, n}, kDouble)));
  const auto v = std::get<0>(torch::linalg_qr(torch::randn({n, n}, kDouble)));
  return (u * sigma.unsqueeze(0)).matmul(v.t());
}

// The Gram route's ranks at the edge of the Press threshold τ (float32's ε, as the thesis counts):
// with 60 singular values between 1.02τ and 1.05τ and 60 between 0.95τ and 0.98τ, its Press rank
// and ε-effective ranks equal the SVD's (float64, exact here) and the design's. A Gram matrix
// accumulated in float32 (error ~ε32·σ_max², against τ² ~ 1e-11·σ_max²) gets the Press rank wrong,
// so the comparison can fail.
TEST(GramSpectrumTest, RanksEqualTheSvdsWithSingularValuesWithinTwoPercentOfTheThreshold) {
  const std::int64_t m = 3000, n = 300;
  const double tau = press_tolerance(1.0, m, n, torch::kFloat32);
  std::vector<double> sigma{1.0};
  for (int i = 1; i < 100; ++i) sigma.push_back(std::pow(30 * tau, i / 99.0));  // 1 down to 30τ
  for (int i = 0; i < 60; ++i) sigma.push_back(tau * (1.05 - 0.03 * i / 59.0));  // 1.05τ .. 1.02τ
  for (int i = 0; i < 60; ++i) sigma.push_back(tau * (0.98 - 0.03 * i / 59.0));  // 0.98τ .. 0.95τ
  while (static_cast<std::int64_t>(sigma.size()) < n) sigma.push_back(tau * 1e-3);
  const auto designed = torch::tensor(sigma, kDouble);
  const auto q = with_singular_values(m, designed, 31);
  const auto exact = svdvals(q);
  ASSERT_EQ(press_rank(exact, m, n), 160);
  StreamingGram gram(n, torch::kCPU);
  StreamingGram single(n, torch::kCPU, torch::kFloat32);
  for (std::int64_t start = 0; start < m; start += 700) {
    const auto block = q.narrow(0, start, std::min<std::int64_t>(700, m - start));
    gram.add_rows(block);
    single.add_rows(block);
  }
  EXPECT_EQ(gram.rows(), m);
  const auto from_gram = gram.singular_values();
  EXPECT_EQ(from_gram.scalar_type(), torch::kFloat64);
  EXPECT_EQ(press_rank(from_gram, m, n), press_rank(exact, m, n));
  const auto want = effective_ranks(exact), got = effective_ranks(from_gram);
  ASSERT_EQ(want.size(), got.size());
  for (std::size_t i = 0; i < want.size(); ++i) EXPECT_EQ(got[i].rank, want[i].rank) << "ε = " << want[i].eps;
  // Near the threshold the Gram route is accurate to far better than the 2% margin.
  const auto near = torch::arange(100, 220);
  EXPECT_LT(((from_gram.index_select(0, near) - exact.index_select(0, near)) / exact.index_select(0, near)).abs().max().item<double>(), 1e-2);
  EXPECT_NE(press_rank(single.singular_values(), m, n), press_rank(exact, m, n)) << "a float32 Gram must lose these";
  EXPECT_THROW(StreamingGram(n, torch::kCPU, torch::kInt64), UsageError);
  EXPECT_THROW(gram.add_rows(torch::zeros({3, n + 1}, kDouble)), UsageError);
  EXPECT_THROW(StreamingGram(n, torch::kCPU).singular_values(), UsageError);
}

// The model's spectrum by the Gram route equals the SVD's to rounding, for log P and for f-logits
// (which go through the streaming QR's R first); its description says what ran.
TEST(GramSpectrumTest, ModelSpectrumByGramEqualsTheSvds) {
  for (const bool f_logits : {false, true}) {
    auto model = random_model({{"kind", "sigsoftmax"}});
    const auto tokens = random_tokens(900);
    LogpMatrixOptions options;
    options.dtype = torch::kFloat64;
    options.f_logits = f_logits;
    const auto direct = svdvals(logp_matrix(model, tokens, options));
    LogpSpectrumOptions spectrum;
    spectrum.method = SpectrumMethod::kGram;
    spectrum.block_rows = 250;
    const auto gram = logp_singular_values(model, tokens, options, spectrum);
    EXPECT_EQ(gram.method, SpectrumMethod::kGram);
    EXPECT_EQ(gram.rows, 899);
    EXPECT_NE(gram.description.find(f_logits ? "RᵀR" : "Gram matrix"), std::string::npos) << gram.description;
    // Values above √ε64·σ_max are found to ~1e-8 of σ_max; the ranks are equal.
    EXPECT_LT((gram.singular_values - direct).abs().max().item<double>(), 1e-7 * direct[0].item<double>()) << f_logits;
    EXPECT_EQ(press_rank(gram.singular_values, 899, 40), press_rank(direct, 899, 40)) << f_logits;
  }
  EXPECT_EQ(parse_spectrum_method("gram"), SpectrumMethod::kGram);
}

// The hidden size from outputs: a spectrum with r strong values then noise puts the gap at r.
TEST(HiddenSizeTest, TheLargestGapEndsTheSignal) {
  const auto sv = torch::tensor({50.0, 20.0, 9.0, 4.0, 2.0, 3e-5, 2e-5, 1e-5}, kDouble);
  const auto e = estimate_hidden_size(sv);
  EXPECT_EQ(e.signal, 5);
  EXPECT_EQ(e.hidden_size, 3);  // r − 2 with a bias
  EXPECT_NEAR(e.gap, 2.0 / 3e-5, 1e-6);
  EXPECT_TRUE(e.found);
  EXPECT_EQ(estimate_hidden_size(sv, {/*bias=*/false}).hidden_size, 4);
  // A gently decaying spectrum has no signature.
  const auto smooth = torch::pow(0.9, torch::arange(50, kDouble));
  EXPECT_FALSE(estimate_hidden_size(smooth).found);
  // Exact zeros after the signal: an infinite gap at the first one.
  const auto exact = estimate_hidden_size(torch::tensor({3.0, 2.0, 1.0, 0.0, 0.0}, kDouble));
  EXPECT_EQ(exact.signal, 3);
  EXPECT_TRUE(std::isinf(exact.gap));
  // The unigram direction's gap after σ_1 (a model that learnt little context) is not the signature.
  const auto unigram = estimate_hidden_size(torch::tensor({1.0, 1e-5, 8e-6, 5e-6, 4e-6, 1e-12, 9e-13}, kDouble));
  EXPECT_EQ(unigram.signal, 5);
  EXPECT_EQ(unigram.hidden_size, 3);
  EXPECT_THROW(estimate_hidden_size(torch::tensor({1.0, 0.5, 0.2}, kDouble)), UsageError);
  EXPECT_THROW(estimate_hidden_size(torch::tensor({1.0, 2.0}, kDouble)), UsageError);
  EXPECT_THROW(estimate_hidden_size(sv, {true, 1.0}), UsageError);
}

// A Softmax model's Q gives its d back exactly; a SigSoftmax model's keeps it hidden. In float64:
// in float32 the values after the signal are Q's rounding (~1e-4 here), and a random model's last
// signal value can be ~0.1, so whether the gap passes 1e3 would depend on the machine's BLAS kernels.
TEST(HiddenSizeTest, SoftmaxRevealsItsHiddenSizeSigSoftmaxDoesNot) {
  LogpMatrixOptions float64;
  float64.dtype = torch::kFloat64;
  for (std::int64_t d : {4, 6, 9}) {
    auto model = random_model({{"kind", "softmax"}}, d);
    model->to(torch::kFloat64);
    const auto q = logp_matrix(model, random_tokens(600), float64);
    const auto e = estimate_hidden_size(svdvals(q));
    EXPECT_TRUE(e.found) << d << ": gap " << e.gap << " at " << e.signal;
    EXPECT_GT(e.gap, 1e8) << d;
    EXPECT_EQ(e.hidden_size, d);
  }
  auto sigsoftmax = random_model({{"kind", "sigsoftmax"}}, 6);
  sigsoftmax->to(torch::kFloat64);
  const auto e = estimate_hidden_size(svdvals(logp_matrix(sigsoftmax, random_tokens(600), float64)));
  EXPECT_FALSE(e.found) << "gap " << e.gap << " at " << e.signal;
}

// auto: the thesis's whole-matrix SVD when Q fits the budget, the streaming QR when it does not.
TEST(StreamingSvdTest, AutoDecomposesQWholeWhenItFitsTheBudget) {
  auto model = random_model();
  const auto tokens = random_tokens(300);
  LogpMatrixOptions options;
  options.max_contexts = 200;
  LogpSpectrumOptions spectrum;
  spectrum.memory_limit_bytes = 200 * 40 * 4;  // exactly Q in float32
  EXPECT_EQ(logp_singular_values(model, tokens, options, spectrum).method, SpectrumMethod::kSvd);
  spectrum.memory_limit_bytes = 200 * 40 * 4 - 1;
  const auto streamed = logp_singular_values(model, tokens, options, spectrum);
  EXPECT_EQ(streamed.method, SpectrumMethod::kStreamingQr);
  EXPECT_EQ(streamed.rows, 200);
  EXPECT_NE(streamed.description.find("streaming QR"), std::string::npos) << streamed.description;
  EXPECT_EQ(parse_spectrum_method("streaming_qr"), SpectrumMethod::kStreamingQr);
  EXPECT_THROW(parse_spectrum_method("qr"), UsageError);
  options.max_contexts = 0;
  EXPECT_THROW(logp_singular_values(model, tokens, options), UsageError);
}

// The in-place LAPACK SVD against singular values fixed by construction: U·diag(σ)·Vᵀ with
// orthonormal U, V, for a tall and a wide matrix, in both precisions.
TEST(LapackSvdTest, ValuesOnlySvdFindsSingularValuesByConstruction) {
  seed_torch(3);
  const auto sigma = torch::tensor({9.0, 4.0, 2.5, 1.0, 1e-3, 1e-7}, kDouble);
  for (auto [rows, cols] : {std::pair<std::int64_t, std::int64_t>{50, 6}, {6, 50}, {30, 20}}) {
    const auto k = std::min(rows, cols);
    const auto u = std::get<0>(torch::linalg_qr(torch::randn({rows, k}, kDouble)));
    const auto v = std::get<0>(torch::linalg_qr(torch::randn({cols, k}, kDouble)));
    auto s = torch::zeros({k}, kDouble);
    s.narrow(0, 0, std::min<std::int64_t>(k, 6)).copy_(sigma.narrow(0, 0, std::min<std::int64_t>(k, 6)));
    const auto a = u.matmul(torch::diag(s)).matmul(v.t());
    const auto got = svdvals_destroying(a.clone());
    ASSERT_EQ(got.size(0), k);
    EXPECT_LT((got - s).abs().max().item<double>(), 1e-13) << rows << "x" << cols;
    const auto got32 = svdvals_destroying(a.to(torch::kFloat32));
    EXPECT_EQ(got32.scalar_type(), torch::kFloat32);
    EXPECT_LT((got32.to(torch::kFloat64) - s).abs().max().item<double>(), 1e-5) << rows << "x" << cols;
  }
  auto bad = torch::ones({3, 3}, kDouble);
  bad[1][1] = std::numeric_limits<double>::infinity();
  EXPECT_THROW(svdvals_destroying(bad), UsageError);
  EXPECT_THROW(svdvals_destroying(torch::ones({3}, kDouble)), UsageError);
  EXPECT_THROW(svdvals_destroying(torch::ones({3, 3}, torch::kInt64)), UsageError);
}

TEST(SpectraTest, NormalizedAndCumulativeClosedForms) {
  const auto sv = torch::tensor({4.0, 2.0, 1.0, 1.0}, kDouble);
  EXPECT_TRUE(torch::allclose(normalized_spectrum(sv), torch::tensor({1.0, 0.5, 0.25, 0.25}, kDouble)));
  EXPECT_TRUE(torch::allclose(cumulative_share(sv), torch::tensor({0.5, 0.75, 0.875, 1.0}, kDouble)));
  EXPECT_THROW(normalized_spectrum(torch::zeros({3}, kDouble)), UsageError);
}

TEST(SpectraTest, ProjectionOfPointsOnALineKeepsTheirSpread) {
  // x_i = t_i·u + p: centered, projected on the principal direction, the first coordinate is
  // ±(t_i − mean t)·‖u‖ and the second is 0.
  const auto t = torch::tensor({-2.0, -1.0, 0.5, 1.0, 3.0}, kDouble);
  const auto u = torch::tensor({1.0, 2.0, 2.0}, kDouble);  // ‖u‖ = 3
  const auto x = t.unsqueeze(1) * u.unsqueeze(0) + torch::tensor({5.0, -1.0, 2.0}, kDouble);
  const auto p = projection_2d(x);
  EXPECT_LT(p.select(1, 1).abs().max().item<double>(), 1e-12);
  const auto expected = (t - t.mean()) * 3.0;
  EXPECT_TRUE(torch::allclose(p.select(1, 0).abs(), expected.abs(), 1e-12, 1e-12));
  // One point has one singular vector: refused in lmkit's words, not Torch's "start (0) + length (2)
  // exceeds dimension size (1)".
  try {
    projection_2d(torch::randn({1, 3}, kDouble));
    ADD_FAILURE() << "one row was projected";
  } catch (const UsageError& e) {
    EXPECT_STREQ(e.what(), "projection_2d: the matrix needs at least 2 rows (the points to project), got 1");
  }
  EXPECT_EQ(projection_2d(torch::randn({2, 3}, kDouble)).sizes(), torch::IntArrayRef({2, 2}));
}

TEST(SpectraTest, PairwiseKlClosedForms) {
  // Identical rows: 0. Two mirrored rows (a, b) and (b, a): KL is the same both ways,
  // (a − b)·log(a/b), so every sampled pair gives it exactly.
  const auto same = torch::log(torch::tensor({{0.2, 0.8}, {0.2, 0.8}, {0.2, 0.8}}, kDouble));
  EXPECT_NEAR(pairwise_kl(same, {100}).mean, 0.0, 1e-15);
  const auto mirrored = torch::log(torch::tensor({{0.3, 0.7}, {0.7, 0.3}}, kDouble));
  const auto kl = pairwise_kl(mirrored, {50, 3});
  EXPECT_NEAR(kl.mean, (0.3 - 0.7) * std::log(0.3 / 0.7), 1e-12);
  EXPECT_NEAR(kl.standard_error, 0.0, 1e-12);
  EXPECT_EQ(kl.pairs, 50);
}

TEST(SpectraTest, PairwiseKlRefusesRowsThatAreNotLogProbabilities) {
  // Probabilities instead of their logs, and logits: KL of those would be a number, and wrong.
  const auto probabilities = torch::tensor({{0.3, 0.7}, {0.7, 0.3}}, kDouble);
  const auto logits = torch::tensor({{1.0, 2.0}, {0.5, -1.0}}, kDouble);
  for (const auto& q : {probabilities, logits}) {
    try {
      pairwise_kl(q, {10});
      ADD_FAILURE() << "rows that are not log-probabilities must be refused";
    } catch (const UsageError& e) {
      EXPECT_NE(std::string(e.what()).find("row 1 is not a log-probability distribution"), std::string::npos) << e.what();
    }
  }
}

TEST(RobustnessTest, RefactorizationKeepsTheRank) {
  seed_torch(2);
  const auto q = torch::randn({60, 40}, kDouble);
  const auto steps = refactorization_robustness(q, {10, 5, torch::kFloat64});
  ASSERT_EQ(steps.size(), 5u);
  for (const auto& s : steps) {
    EXPECT_EQ(s.press_rank, 10) << "iteration " << s.iteration;
    EXPECT_LT(s.error, 1e-26);
  }
}

TEST(RobustnessTest, NoiseAboveTheToleranceFillsTheRank) {
  seed_torch(2);
  const auto q = torch::randn({60, 40}, kDouble);
  // n = 40: sd = √c/40. c = 0 keeps rank 10; c = 0.16 (sd 0.01) is far above float64's tolerance.
  const auto steps = noise_robustness(q, {0.0, 1e-60, 0.16}, {10, 1, torch::kFloat64});
  ASSERT_EQ(steps.size(), 3u);
  EXPECT_EQ(steps[0].press_rank, 10);
  EXPECT_EQ(steps[1].press_rank, 10);
  EXPECT_EQ(steps[2].press_rank, 40);
  EXPECT_DOUBLE_EQ(steps[2].noise_sd, 0.01);
  // The 1e−3-effective rank does not see the noise at all (Table 5.13's point).
  EXPECT_EQ(steps[0].effective[0].rank, steps[2].effective[0].rank);
  EXPECT_LE(steps[2].effective[0].rank, 10);
}

// Tables 5.12/5.13: Press rank goes from keep (10) to nearly n over about five decades of c
// (1e-25 → 10, 1e-20 → 9,899 of 10,000). For a square Gaussian matrix the singular values below a
// tolerance number ∝ 1/sd, so that span is ~2 decades of sd: 4–5 decades of c only when c/n² is
// the variance. (Read as the sd, the same transition took 2 decades of c.)
TEST(RobustnessTest, TheNoiseTransitionSpansFourToFiveDecadesOfC) {
  seed_torch(3);
  const int64_t n = 200;
  const auto q = torch::randn({n, n}, kDouble);
  std::vector<double> ladder;
  for (double exponent = -40; exponent <= -10; exponent += 0.25) ladder.push_back(std::pow(10.0, exponent));
  const auto steps = noise_robustness(q, ladder, {10, 4, torch::kFloat64});
  double last_at_keep = 0, first_near_full = 0;
  for (const auto& s : steps) {
    if (s.press_rank == 10) last_at_keep = s.c;
    if (first_near_full == 0 && s.press_rank >= static_cast<int64_t>(0.99 * n)) first_near_full = s.c;
  }
  ASSERT_GT(last_at_keep, 0);
  ASSERT_GT(first_near_full, 0);
  const double decades = std::log10(first_near_full / last_at_keep);
  EXPECT_GE(decades, 3.5);
  EXPECT_LE(decades, 5.5);
}

}  // namespace
}  // namespace lmkit::analysis
