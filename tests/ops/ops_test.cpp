// The custom ops against their composed ATen references and against finite differences (float64).
#include <gtest/gtest.h>

#include <functional>
#include <string>

#include "ops/device_memory.h"
#include "ops/gss_log_softmax.h"
#include "ops/mixture_nll.h"
#include "ops/plif.h"
#include "runtime/core/error.h"
#include "runtime/core/tensor_memory.h"
#include "tests/support/gradcheck.h"

namespace lmkit::ops {
namespace {

using lmkit::testing::gradient_error;
const auto kDouble = torch::TensorOptions().dtype(torch::kFloat64);

TEST(GssLogSoftmaxTest, MatchesComposedExpression) {
  torch::manual_seed(0);
  auto l = torch::randn({7, 13}, kDouble) * 3;
  for (auto [c, k] : std::vector<std::pair<double, double>>{{0, 2}, {-1.5, 3}, {2, 1.25}, {0.5, 1}}) {
    auto expected = torch::log_softmax(gss_transform(l, c, k), 1);
    EXPECT_TRUE(torch::allclose(gss_log_softmax(l, c, k), expected, 1e-12, 1e-12)) << c << " " << k;
    auto lf = l.to(torch::kFloat32);
    EXPECT_TRUE(torch::allclose(gss_log_softmax(lf, c, k), expected.to(torch::kFloat32), 1e-5, 1e-5));
  }
}

TEST(GssLogSoftmaxTest, BackwardMatchesAutogradAndFiniteDifferences) {
  torch::manual_seed(1);
  auto l = (torch::randn({4, 9}, kDouble) * 2).requires_grad_();
  for (auto [c, k] : std::vector<std::pair<double, double>>{{0, 2}, {-1, 2.5}, {1, 1.5}}) {
    auto g = torch::randn({4, 9}, kDouble);
    auto a = torch::autograd::grad({gss_log_softmax(l, c, k)}, {l}, {g})[0];
    auto b = torch::autograd::grad({torch::log_softmax(gss_transform(l, c, k), 1)}, {l}, {g})[0];
    EXPECT_TRUE(torch::allclose(a, b, 1e-10, 1e-12));
    const double cc = c, kk = k;
    EXPECT_LT(gradient_error([&](const auto& in) { return gss_log_softmax(in[0], cc, kk); }, {l}), 1e-7);
  }
}

TEST(GssLogSoftmaxTest, FiniteForHugeLogits) {
  auto l = torch::tensor({{1e4, -1e4, 0.0, 5.0}, {-1e4, -1e4, -1e4, -1e4}}).requires_grad_();
  auto out = gss_log_softmax(l, 0.0, 2.0);
  EXPECT_TRUE(torch::isfinite(out).all().item<bool>());
  EXPECT_NEAR(out.exp().sum(1)[0].item<double>(), 1.0, 1e-5);
  out.select(1, 0).sum().backward();
  EXPECT_TRUE(torch::isfinite(l.grad()).all().item<bool>());
}

// docs/models.md promises rows that sum to 1 within 1e-5 in float32. Subtracting a float32
// shift = max + log(sum) from logits near ±1e4 rounds at the shift's ulp (~1e-3), which alone
// broke the promise. (The GSS transform itself rounds at that ulp in float32; that is the input's
// precision, not the normalization's, so the exact comparison is made where f is the identity.)
TEST(GssLogSoftmaxTest, Float32RowsAreNormalizedAtLargeLogits) {
  torch::manual_seed(4);
  for (double scale : {1e3, 1e4}) {
    for (double sign : {1.0, -1.0}) {
      auto l = (sign * scale + torch::randn({16, 50}, kDouble) * 3).to(torch::kFloat32);
      for (auto [c, k] : std::vector<std::pair<double, double>>{{0, 2}, {0, 1}, {1.5, 1.25}}) {
        auto out = gss_log_softmax(l, c, k).to(torch::kFloat64);
        EXPECT_LT((out.exp().sum(1) - 1).abs().max().item<double>(), 1e-5) << scale * sign << " " << k;
      }
      auto truth = torch::log_softmax(l.to(torch::kFloat64), 1);
      EXPECT_LT((gss_log_softmax(l, 0, 1).to(torch::kFloat64) - truth).abs().max().item<double>(), 1e-5) << scale * sign;
    }
  }
}

TEST(PlifTest, MatchesReferenceAndIsIdentityWithUnitSlopes) {
  torch::manual_seed(2);
  const double T = 3.0;
  auto l = torch::randn({5, 11}, kDouble) * 4;  // many outside [−T, T]
  auto ones = torch::ones({6}, kDouble);
  EXPECT_TRUE(torch::allclose(plif(l, ones, T), l, 1e-12, 1e-12));
  auto s = torch::rand({6}, kDouble) + 0.1;
  EXPECT_TRUE(torch::allclose(plif(l, s, T), plif_reference(l, s, T), 1e-12, 1e-12));
}

TEST(PlifTest, ContinuousAtKnotsAndIncreasing) {
  torch::manual_seed(3);
  const double T = 2.0;
  auto s = torch::rand({4}, kDouble) + 0.2;
  auto knots = torch::linspace(-T, T, 5, kDouble);
  auto below = plif(knots - 1e-9, s, T), above = plif(knots + 1e-9, s, T);
  EXPECT_TRUE(torch::allclose(below, above, 0, 1e-7));
  auto grid = torch::linspace(-5, 5, 1001, kDouble);
  auto f = plif(grid, s, T);
  EXPECT_TRUE((f.slice(0, 1) > f.slice(0, 0, -1)).all().item<bool>());
}

TEST(PlifTest, GradientsMatchFiniteDifferences) {
  torch::manual_seed(4);
  const double T = 2.0;
  // Keep logits away from knots so the finite differences stay on one piece.
  auto l = (torch::rand({3, 7}, kDouble) * 5.6 - 2.8);
  l = (l + 0.013).requires_grad_();
  auto s = (torch::rand({4}, kDouble) + 0.5).requires_grad_();
  EXPECT_LT(gradient_error([&](const auto& in) { return plif(in[0], in[1], T); }, {l, s}), 1e-7);
}

TEST(PlifTest, GradientsMatchReferenceWhenEndIntervalsAreCrowded) {
  // Most logits beyond ±T: the end intervals collect long runs (the case the CUDA kernel splits
  // over many summation chunks); against autograd through the composed reference.
  torch::manual_seed(7);
  const double T = 0.5;
  auto l = (torch::randn({64, 300}, kDouble) * 5).requires_grad_();
  auto s = (torch::rand({7}, kDouble) + 0.1).requires_grad_();
  auto g = torch::randn({64, 300}, kDouble);
  auto got = torch::autograd::grad({plif(l, s, T)}, {l, s}, {g});
  auto want = torch::autograd::grad({plif_reference(l, s, T)}, {l, s}, {g});
  EXPECT_TRUE(torch::allclose(got[0], want[0], 1e-12, 1e-12));
  EXPECT_TRUE(torch::allclose(got[1], want[1], 1e-10, 1e-10));
}

TEST(PlifTest, SlopeGradientIsDeterministic) {
  torch::manual_seed(5);
  auto l = torch::randn({64, 500}) * 10;
  auto v = torch::randn({1000}).requires_grad_();
  auto g = torch::randn({64, 500});
  auto first = torch::autograd::grad({plif(l, torch::softplus(v), 20.0)}, {v}, {g})[0];
  auto second = torch::autograd::grad({plif(l, torch::softplus(v), 20.0)}, {v}, {g})[0];
  EXPECT_TRUE(torch::equal(first, second));
}

// The composed loss −log_softmax(f(l))[t] through autograd (plif_reference: ATen ops only).
torch::Tensor composed_plif_nll(const torch::Tensor& l, const torch::Tensor& s, const torch::Tensor& t, double T) {
  return -torch::log_softmax(plif_reference(l, s, T), 1).gather(1, t.reshape({-1, 1})).squeeze(1);
}

TEST(PlifNllTest, MatchesTheComposedLossAndItsGradients) {
  torch::manual_seed(21);
  const double T = 2.0;
  auto l = (torch::randn({13, 57}, kDouble) * 3).requires_grad_();  // many beyond ±T
  auto s = (torch::rand({9}, kDouble) + 0.1).requires_grad_();
  const auto t = torch::randint(57, {13}, torch::kInt64);
  const auto g = torch::randn({13}, kDouble);
  auto got = plif_nll(l, s, t, T);
  auto want = composed_plif_nll(l, s, t, T);
  EXPECT_TRUE(torch::allclose(got, want, 1e-12, 1e-12));
  auto got_grads = torch::autograd::grad({got}, {l, s}, {g});
  auto want_grads = torch::autograd::grad({want}, {l, s}, {g});
  EXPECT_TRUE(torch::allclose(got_grads[0], want_grads[0], 1e-12, 1e-12));
  EXPECT_TRUE(torch::allclose(got_grads[1], want_grads[1], 1e-10, 1e-10));
}

TEST(PlifNllTest, GradientsMatchFiniteDifferences) {
  torch::manual_seed(22);
  const double T = 2.0;
  // Logits away from the knots, so that the finite differences stay on one piece.
  auto l = (torch::rand({4, 9}, kDouble) * 5.6 - 2.8 + 0.013).requires_grad_();
  auto s = (torch::rand({4}, kDouble) + 0.5).requires_grad_();
  const auto t = torch::tensor({0, 8, 3, 3}, torch::kInt64);
  EXPECT_LT(gradient_error([&](const auto& in) { return plif_nll(in[0], in[1], t, T); }, {l, s}), 1e-7);
}

TEST(PlifNllTest, Float32AgreesWithFloat64AtLargeLogits) {
  torch::manual_seed(23);
  const double T = 5.0;
  const auto l64 = torch::randn({8, 3000}, kDouble) * 400;
  const auto s64 = torch::rand({50}, kDouble) + 0.5;
  const auto t = torch::randint(3000, {8}, torch::kInt64);
  const auto truth = composed_plif_nll(l64, s64, t, T);
  const auto got = plif_nll(l64.to(torch::kFloat32), s64.to(torch::kFloat32), t, T).to(torch::kFloat64);
  EXPECT_TRUE(torch::isfinite(got).all().item<bool>());
  // float32's ulp at ~2000 is 1.2e-4.
  EXPECT_LT((got - truth).abs().max().item<double>(), 2e-3);
}

// Softmax's memory: one full-size tensor in forward (f, freed before it returns) and in backward
// (the logits' gradient, which f's second computation becomes). The composition through plif()
// and log_softmax holds f and log_softmax's output in forward, and at least two more in backward.
TEST(PlifNllTest, HoldsOneFullSizeTensorInForwardAndInBackward) {
  count_host_tensor_memory();
  torch::manual_seed(24);
  const double T = 5.0;
  const int64_t M = 256, N = 4096;
  const double full = static_cast<double>(M * N * sizeof(float));
  auto l = (torch::randn({M, N}) * 4).requires_grad_();
  auto s = (torch::rand({100}) + 0.5).requires_grad_();
  const auto t = torch::randint(N, {M}, torch::kInt64);
  // The first call on a device runs the kernel's self-check: not part of what is measured.
  plif_nll(l.detach().narrow(0, 0, 2), s.detach(), t.narrow(0, 0, 2), T);
  const auto measure = [&](const std::function<torch::Tensor()>& loss) {
    l.mutable_grad() = torch::Tensor();
    s.mutable_grad() = torch::Tensor();
    reset_peak_host_tensor_bytes();
    const auto before = host_tensor_bytes();
    auto value = loss().sum();
    const double forward = static_cast<double>(peak_host_tensor_bytes() - before) / full;
    reset_peak_host_tensor_bytes();
    const auto before_backward = host_tensor_bytes();
    value.backward();
    const double backward = static_cast<double>(peak_host_tensor_bytes() - before_backward) / full;
    return std::make_pair(forward, backward);
  };
  const auto [forward, backward] = measure([&] { return plif_nll(l, s, t, T); });
  EXPECT_LT(forward, 1.25) << "full-size tensors at once in forward";
  EXPECT_LT(backward, 1.25) << "full-size tensors at once in backward";
  // The measure tells the two apart.
  const auto [composed_forward, composed_backward] =
      measure([&] { return -torch::log_softmax(plif(l, s, T), 1).gather(1, t.reshape({-1, 1})).squeeze(1); });
  EXPECT_GT(composed_forward, 1.75);
  EXPECT_GT(composed_backward, 1.75);
}

TEST(PlifNllTest, BadTargetsAreNamed) {
  const auto l = torch::randn({3, 5});
  const auto s = torch::ones({4});
  EXPECT_THROW(plif_nll(l, s, torch::tensor({0, 1}, torch::kInt64), 1.0), UsageError);
  EXPECT_THROW(plif_nll(l, s, torch::tensor({0, 1, 2}, torch::kInt32), 1.0), UsageError);
  EXPECT_THROW(plif_nll(torch::randn({3, 0}), s, torch::tensor({0, 0, 0}, torch::kInt64), 1.0), UsageError);  // no words
}

struct MixtureCase {
  torch::Tensor latent, log_prior, weight, bias, targets;
};

MixtureCase mixture_case(int64_t M, int64_t K, int64_t d, int64_t N, bool requires_grad) {
  torch::manual_seed(6);
  MixtureCase m;
  m.latent = torch::randn({M, K, d}, kDouble).tanh().requires_grad_(requires_grad);
  m.log_prior = torch::log_softmax(torch::randn({M, K}, kDouble), 1).detach().requires_grad_(requires_grad);
  m.weight = torch::randn({N, d}, kDouble).requires_grad_(requires_grad);
  m.bias = (torch::randn({N}, kDouble) * 0.1).requires_grad_(requires_grad);
  m.targets = torch::randint(N, {M}, torch::kInt64);
  return m;
}

TEST(MixtureNllTest, EqualsExplicitMixtureOfSoftmaxes) {
  auto m = mixture_case(6, 3, 4, 9, false);
  for (double kappa : {1.0, 2.0}) {
    auto logp = mixture_log_probs(m.latent, m.log_prior, m.weight, m.bias, 0.0, kappa);
    // log Σ_k π_k P_k computed the naive way (fine in float64 at this scale).
    auto l = torch::einsum("mkd,nd->mkn", {m.latent, m.weight}) + m.bias;
    auto pk = kappa == 1.0 ? torch::softmax(l, 2) : torch::softmax(gss_transform(l, 0.0, kappa), 2);
    auto naive = (m.log_prior.exp().unsqueeze(2) * pk).sum(1).log();
    EXPECT_TRUE(torch::allclose(logp, naive, 1e-10, 1e-12));
    auto nll = mixture_nll(m.latent, m.log_prior, m.weight, m.bias, m.targets, 0.0, kappa);
    EXPECT_TRUE(torch::allclose(nll, -logp.gather(1, m.targets.view({-1, 1})).squeeze(1), 1e-10, 1e-12));
  }
}

TEST(MixtureNllTest, GradientsMatchFiniteDifferences) {
  for (double kappa : {1.0, 2.0}) {
    auto m = mixture_case(4, 3, 3, 7, true);
    auto f = [&](const std::vector<torch::Tensor>& in) {
      return mixture_nll(in[0], in[1], in[2], in[3], m.targets, 0.0, kappa);
    };
    EXPECT_LT(gradient_error(f, {m.latent, m.log_prior, m.weight, m.bias}), 1e-7) << kappa;
  }
}

// MoS and MoSS in float32 at logits near ±1e4: the normalization of each component is exact to
// float32's precision of the result. The truth normalizes the same float32 component logits in
// float64 (the logits' own rounding at that size, ~1e-3, is the input's precision).
TEST(MixtureNllTest, Float32NormalizationIsExactAtLargeLogits) {
  for (double kappa : {1.0, 2.0}) {
    for (double shift : {1e4, -1e4}) {
      auto m = mixture_case(8, 3, 4, 40, true);
      auto f = [](const torch::Tensor& t) { return t.detach().to(torch::kFloat32); };
      auto latent = f(m.latent), log_prior = f(m.log_prior), weight = f(m.weight), bias = f(m.bias + shift);
      auto out = mixture_nll(latent, log_prior, weight, bias, m.targets, 0.0, kappa);
      std::vector<torch::Tensor> parts;
      for (int64_t k = 0; k < latent.size(1); ++k) {
        auto z = torch::addmm(bias, latent.select(1, k), weight.t());
        if (kappa != 1.0) z = gss_transform(z, 0.0, kappa);
        parts.push_back(log_prior.select(1, k).to(torch::kFloat64) +
                        torch::log_softmax(z.to(torch::kFloat64), 1).gather(1, m.targets.view({-1, 1})).squeeze(1));
      }
      auto truth = -torch::logsumexp(torch::stack(parts, 1), 1);
      EXPECT_LT((out.to(torch::kFloat64) - truth).abs().max().item<double>(), 1e-5) << kappa << " " << shift;
    }
  }
}

// The backward pass in float32 at logits of ±1000 (MoS and MoSS), against the same op in float64
// on the same inputs: every gradient within 1e-5 of the reference's scale. A normalizer kept as one
// float32 lse ≈ 3e3 (spacing 2.4e-4) makes p = exp(z − lse) off by that much relative: 2e-5 here;
// kept as max and log-sum apart, ~1e-7. The inputs are dyadic (latent and bias in eighths, weights
// whole numbers), so that float32 computes the logits exactly in any summation order: the test
// measures the normalizer, not the rounding of a BLAS kernel, which differs between CPUs (on an
// AMD EPYC, float-rounded random inputs gave 1.4e-5 from the logits alone).
TEST(MixtureNllTest, Float32BackwardAtLargeLogits) {
  for (const double kappa : {1.0, 1.7}) {
    for (const int seed : {1, 2, 3}) {
      torch::manual_seed(seed);
      const int64_t M = 6, K = 3, d = 8, N = 1537;
      auto rounded = [](const torch::Tensor& t) { return t.to(torch::kFloat32).to(torch::kFloat64); };
      auto eighths = [](const torch::Tensor& t) { return torch::round(t * 8) / 8; };
      const auto latent = eighths(torch::randn({M, K, d}, kDouble));
      const auto log_prior = rounded(torch::log_softmax(torch::randn({M, K}, kDouble), 1));
      const auto weight = torch::round(torch::randn({N, d}, kDouble) * (1000.0 / 3));
      const auto bias = eighths(torch::randn({N}, kDouble));
      const auto targets = torch::randint(N, {M}, torch::kInt64);
      const auto upstream = torch::randn({M}, kDouble);
      std::vector<torch::Tensor> single, reference;
      for (const auto& t : {latent, log_prior, weight, bias}) {
        single.push_back(t.to(torch::kFloat32).requires_grad_());
        reference.push_back(t.clone().requires_grad_());
      }
      const auto nll32 = mixture_nll(single[0], single[1], single[2], single[3], targets, 0.3, kappa);
      const auto nll64 = mixture_nll(reference[0], reference[1], reference[2], reference[3], targets, 0.3, kappa);
      const auto g32 = torch::autograd::grad({nll32}, single, {upstream.to(torch::kFloat32)});
      const auto g64 = torch::autograd::grad({nll64}, reference, {upstream});
      const char* names[] = {"latent", "log_prior", "weight", "bias"};
      for (std::size_t i = 0; i < g32.size(); ++i) {
        const double scale = 1 + g64[i].abs().max().item<double>();
        const double error = (g32[i].to(torch::kFloat64) - g64[i]).abs().max().item<double>() / scale;
        EXPECT_LT(error, 1e-5) << "∂/∂" << names[i] << ", kappa " << kappa << ", seed " << seed;
      }
      const double forward = (nll32.to(torch::kFloat64) - nll64).abs().max().item<double>() /
                             (1 + nll64.abs().max().item<double>());
      EXPECT_LT(forward, 1e-5) << "NLL, kappa " << kappa << ", seed " << seed;
    }
  }
}

TEST(MixtureNllTest, WorksWithoutBiasAndFiniteForHugeLogits) {
  auto m = mixture_case(3, 2, 3, 5, false);
  auto big_weight = (m.weight * 1e4).requires_grad_();
  auto nll = mixture_nll(m.latent, m.log_prior, big_weight, torch::Tensor(), m.targets);
  EXPECT_TRUE(torch::isfinite(nll).all().item<bool>());
  nll.sum().backward();
  EXPECT_TRUE(torch::isfinite(big_weight.grad()).all().item<bool>());
}

TEST(OpsTest, BadArgumentsAreNamed) {
  auto l = torch::randn({2, 3});
  EXPECT_THROW(plif(l, torch::ones({2, 2}), 1.0), std::invalid_argument);
  EXPECT_THROW(gss_log_softmax(torch::ones({2}, torch::kInt64), 0, 2), std::invalid_argument);
  try {
    mixture_nll(torch::randn({2, 3}), torch::randn({2, 3}), torch::randn({4, 3}), {}, torch::zeros({2}, torch::kInt64));
    FAIL();
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("latent must be [M, K, d]"), std::string::npos);
  }
}

// The CPU has no allocator counts: asked for them, lmkit says so and where a CPU's peak is found.
TEST(DeviceMemoryTest, RefusesANonCudaDeviceByName) {
  for (const auto* read : {"device_memory", "reset_peak_device_memory"}) {
    try {
      if (std::string(read) == "device_memory") {
        (void)device_memory("cpu");
      } else {
        reset_peak_device_memory("cpu");
      }
      ADD_FAILURE() << read << "(\"cpu\") did not throw";
    } catch (const UsageError& e) {
      EXPECT_NE(std::string(e.what()).find("'cpu' is not a CUDA device"), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("VmHWM"), std::string::npos) << e.what();
    }
  }
  EXPECT_THROW(device_memory("gpu0"), UsageError);
}

}  // namespace
}  // namespace lmkit::ops
