// The custom ops on CUDA against the same ops on CPU (forward and every gradient, float64 and
// float32), and PLIF's slope gradients bit for bit across runs. Every test skips itself where no
// CUDA device is usable, so a CPU machine reports them as skipped (CTest label gpu).
#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

#include "ops/device_memory.h"
#include "ops/gss_log_softmax.h"
#include "ops/kernel_check.h"
#include "ops/mixture_nll.h"
#include "ops/plif.h"

#ifdef LMKIT_OPS_CUDA
#include <c10/cuda/CUDACachingAllocator.h>
#endif

namespace lmkit::ops {
namespace {

#define LMKIT_SKIP_WITHOUT_CUDA()                                           \
  do {                                                                      \
    if (!torch::cuda::is_available()) GTEST_SKIP() << "no CUDA device";     \
  } while (0)

// Tolerances for CUDA vs CPU: the kernels sum in a different order (block trees, online
// logsumexp), so agreement is to a few ulps of the accumulation type per term.
struct Tolerance {
  double rtol, atol;
};
Tolerance tolerance_for(torch::ScalarType type) {
  return type == torch::kFloat64 ? Tolerance{1e-10, 1e-12} : Tolerance{1e-4, 1e-5};
}

::testing::AssertionResult close(const torch::Tensor& cuda_result, const torch::Tensor& cpu_result,
                                 torch::ScalarType type, const std::string& what) {
  const auto tol = tolerance_for(type);
  const auto got = cuda_result.to(torch::kCPU).to(torch::kFloat64);
  const auto want = cpu_result.to(torch::kFloat64);
  if (got.sizes() != want.sizes())
    return ::testing::AssertionFailure() << what << ": shapes differ";
  if (torch::allclose(got, want, tol.rtol, tol.atol)) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure()
         << what << ": largest difference " << (got - want).abs().max().item<double>()
         << " (largest value " << want.abs().max().item<double>() << ")";
}

const std::vector<torch::ScalarType> kTypes{torch::kFloat64, torch::kFloat32};

// A leaf on `device` holding `values` in `type`, requiring grad.
torch::Tensor leaf(const torch::Tensor& values, torch::ScalarType type, torch::Device device) {
  return values.to(device, type).detach().requires_grad_();
}

std::vector<torch::Tensor> gradients(const torch::Tensor& out, const std::vector<torch::Tensor>& inputs,
                                     const torch::Tensor& upstream) {
  return torch::autograd::grad({out}, inputs, {upstream.to(out.device(), out.scalar_type())});
}

TEST(OpsCudaTest, GssLogSoftmaxMatchesCpu) {
  LMKIT_SKIP_WITHOUT_CUDA();
  torch::manual_seed(10);
  const torch::Device gpu(torch::kCUDA);
  // Short rows, rows longer than a block, a non-contiguous input and leading batch dimensions.
  const std::vector<torch::Tensor> inputs{
      torch::randn({7, 13}, torch::kFloat64) * 3, torch::randn({5, 10007}, torch::kFloat64) * 4,
      torch::randn({300, 6}, torch::kFloat64).t(), torch::randn({2, 3, 257}, torch::kFloat64)};
  for (const auto& values : inputs) {
    for (auto [c, k] : std::vector<std::pair<double, double>>{{0, 2}, {-1.5, 3}, {0.5, 1}}) {
      for (auto type : kTypes) {
        const auto label = "gss_log_softmax " + std::string(c10::toString(type)) + " c=" +
                           std::to_string(c) + " k=" + std::to_string(k);
        auto on_cpu = leaf(values, type, torch::kCPU), on_gpu = leaf(values, type, gpu);
        auto out_cpu = gss_log_softmax(on_cpu, c, k), out_gpu = gss_log_softmax(on_gpu, c, k);
        EXPECT_TRUE(close(out_gpu, out_cpu, type, label + " forward"));
        const auto upstream = torch::randn(values.sizes(), torch::kFloat64);
        EXPECT_TRUE(close(gradients(out_gpu, {on_gpu}, upstream)[0],
                          gradients(out_cpu, {on_cpu}, upstream)[0], type, label + " backward"));
      }
    }
  }
}

TEST(OpsCudaTest, GssLogSoftmaxFiniteForHugeLogits) {
  LMKIT_SKIP_WITHOUT_CUDA();
  auto l = torch::tensor({{1e4, -1e4, 0.0, 5.0}, {-1e4, -1e4, -1e4, -1e4}}).to(torch::kCUDA).requires_grad_();
  auto out = gss_log_softmax(l, 0.0, 2.0);
  EXPECT_TRUE(torch::isfinite(out).all().item<bool>());
  EXPECT_NEAR(out.exp().sum(1)[0].item<double>(), 1.0, 1e-5);
  out.select(1, 0).sum().backward();
  EXPECT_TRUE(torch::isfinite(l.grad()).all().item<bool>());
}

// As GssLogSoftmaxTest.Float32RowsAreNormalizedAtLargeLogits: the kernel subtracts max and
// log-sum apart, so float32 rows near ±1e4 sum to 1 within 1e-5.
TEST(OpsCudaTest, GssLogSoftmaxFloat32RowsAreNormalizedAtLargeLogits) {
  LMKIT_SKIP_WITHOUT_CUDA();
  torch::manual_seed(4);
  for (double shift : {1e3, -1e3, 1e4, -1e4}) {
    auto l = (shift + torch::randn({16, 5000}, torch::kFloat64) * 3).to(torch::kFloat32).to(torch::kCUDA);
    for (auto [c, k] : std::vector<std::pair<double, double>>{{0, 2}, {0, 1}, {1.5, 1.25}}) {
      auto out = gss_log_softmax(l, c, k).to(torch::kCPU).to(torch::kFloat64);
      EXPECT_LT((out.exp().sum(1) - 1).abs().max().item<double>(), 1e-5) << shift << " " << k;
    }
  }
}

// The mixture kernel's log P(t) at logits near ±1e4 against the same float32 logits normalized in
// float64 (as MixtureNllTest.Float32NormalizationIsExactAtLargeLogits on the CPU).
TEST(OpsCudaTest, MixtureNllFloat32NormalizationIsExactAtLargeLogits) {
  LMKIT_SKIP_WITHOUT_CUDA();
  torch::manual_seed(6);
  const int64_t M = 8, K = 3, d = 4, N = 2000;
  for (double kappa : {1.0, 2.0}) {
    for (double shift : {1e4, -1e4}) {
      auto latent = torch::randn({M, K, d}).to(torch::kCUDA);
      auto log_prior = torch::log_softmax(torch::randn({M, K}), 1).to(torch::kCUDA);
      auto weight = torch::randn({N, d}).to(torch::kCUDA);
      auto bias = (torch::randn({N}) + shift).to(torch::kCUDA);
      auto targets = torch::randint(N, {M}, torch::kInt64).to(torch::kCUDA);
      auto out = mixture_nll(latent, log_prior, weight, bias, targets, 0.0, kappa).to(torch::kCPU).to(torch::kFloat64);
      std::vector<torch::Tensor> parts;
      for (int64_t k = 0; k < K; ++k) {
        auto z = torch::addmm(bias, latent.select(1, k), weight.t());
        if (kappa != 1.0) z = gss_transform(z, 0.0, kappa);
        parts.push_back(log_prior.select(1, k).to(torch::kFloat64) +
                        torch::log_softmax(z.to(torch::kFloat64), 1).gather(1, targets.view({-1, 1})).squeeze(1));
      }
      auto truth = (-torch::logsumexp(torch::stack(parts, 1), 1)).to(torch::kCPU);
      // The kernel transforms in-register; its float32 GSS transform may round differently from
      // ATen's by an ulp of the logit (~1e-3 at 1e4) where kappa ≠ 1.
      EXPECT_LT((out - truth).abs().max().item<double>(), kappa == 1.0 ? 1e-5 : 2e-3) << kappa << " " << shift;
    }
  }
}

struct PlifCase {
  std::string name;
  torch::Tensor logits;
  int64_t K;
  double T;
};

std::vector<PlifCase> plif_cases() {
  torch::manual_seed(11);
  return {
      // Few intervals, many logits outside [−T, T].
      {"small", torch::randn({5, 11}, torch::kFloat64) * 4, 6, 3.0},
      // The head's default K with vocabulary-sized rows: most intervals empty or short.
      {"wide", torch::randn({16, 5000}, torch::kFloat64) * 6, 100000, 20.0},
      // Narrow range: the two end intervals hold most logits, runs span many summation chunks.
      {"clamped", torch::randn({64, 3000}, torch::kFloat64) * 5, 7, 0.5},
      {"one interval", torch::randn({3, 1000}, torch::kFloat64), 1, 1.0},
      // More logits than the CUDA kernel sorts at once (2^24): the slope sums continue across
      // tiles, and intervals span the tiles' boundary.
      {"two sort tiles", torch::randn({4097, 4097}, torch::kFloat64) * 6, 1000, 4.0},
  };
}

TEST(OpsCudaTest, PlifMatchesCpu) {
  LMKIT_SKIP_WITHOUT_CUDA();
  const torch::Device gpu(torch::kCUDA);
  for (const auto& example : plif_cases()) {
    const auto slope_values = torch::rand({example.K}, torch::kFloat64) + 0.1;
    const auto upstream = torch::randn(example.logits.sizes(), torch::kFloat64);
    for (auto type : kTypes) {
      const auto label = "plif " + example.name + " " + std::string(c10::toString(type));
      auto l_cpu = leaf(example.logits, type, torch::kCPU), l_gpu = leaf(example.logits, type, gpu);
      auto s_cpu = leaf(slope_values, type, torch::kCPU), s_gpu = leaf(slope_values, type, gpu);
      auto out_cpu = plif(l_cpu, s_cpu, example.T), out_gpu = plif(l_gpu, s_gpu, example.T);
      EXPECT_TRUE(close(out_gpu, out_cpu, type, label + " forward"));
      auto g_cpu = gradients(out_cpu, {l_cpu, s_cpu}, upstream);
      auto g_gpu = gradients(out_gpu, {l_gpu, s_gpu}, upstream);
      EXPECT_TRUE(close(g_gpu[0], g_cpu[0], type, label + " d/dlogits"));
      EXPECT_TRUE(close(g_gpu[1], g_cpu[1], type, label + " d/dslopes"));
    }
  }
}

TEST(OpsCudaTest, PlifSlopeGradientIsBitIdenticalAcrossRuns) {
  LMKIT_SKIP_WITHOUT_CUDA();
#ifndef LMKIT_OPS_CUDA
  GTEST_SKIP() << "built without the CUDA kernels: PLIF's ATen fallback (index_add) is not deterministic on GPUs";
#endif
  torch::manual_seed(12);
  const torch::Device gpu(torch::kCUDA);
  for (auto type : kTypes) {
    // Enough logits that a nondeterministic reduction would almost surely show it, and more than
    // the kernel sorts at once (2^24), so the sums continue from tile to tile.
    auto l = (torch::randn({4100, 4100}) * 8).to(gpu, type);
    auto v = torch::randn({100000}).to(gpu, type).requires_grad_();
    auto g = torch::randn({4100, 4100}).to(gpu, type);
    auto first = torch::autograd::grad({plif(l, torch::softplus(v), 20.0)}, {v}, {g})[0];
    for (int run = 0; run < 3; ++run) {
      auto again = torch::autograd::grad({plif(l, torch::softplus(v), 20.0)}, {v}, {g})[0];
      EXPECT_TRUE(torch::equal(first, again)) << c10::toString(type) << " run " << run;
    }
  }
}

// The LMS-PLIF head's loss (one op; its CUDA backward writes the logits' gradient over the softmax
// it computes): forward and both gradients against the CPU, on rows of a vocabulary's width and on
// more logits than the slope sums sort at once (2^24), and the same bits on every run.
TEST(OpsCudaTest, PlifNllMatchesCpuAndRepeatsBitForBit) {
  LMKIT_SKIP_WITHOUT_CUDA();
  torch::manual_seed(14);
  const torch::Device gpu(torch::kCUDA);
  struct Case {
    std::string name;
    int64_t rows, width, K;
    double T;
  };
  for (const auto& c : std::vector<Case>{{"vocabulary rows", 37, 3001, 1000, 4.0}, {"two sort tiles", 4100, 4100, 100000, 20.0}}) {
    const auto logits = torch::randn({c.rows, c.width}, torch::kFloat64) * 5;
    const auto slope_values = torch::rand({c.K}, torch::kFloat64) + 0.1;
    const auto targets = torch::randint(c.width, {c.rows}, torch::kInt64);
    const auto upstream = torch::randn({c.rows}, torch::kFloat64);
    for (auto type : kTypes) {
      const auto label = "plif_nll " + c.name + " " + std::string(c10::toString(type));
      auto l_cpu = leaf(logits, type, torch::kCPU), l_gpu = leaf(logits, type, gpu);
      auto s_cpu = leaf(slope_values, type, torch::kCPU), s_gpu = leaf(slope_values, type, gpu);
      auto out_cpu = plif_nll(l_cpu, s_cpu, targets, c.T), out_gpu = plif_nll(l_gpu, s_gpu, targets.to(gpu), c.T);
      EXPECT_TRUE(close(out_gpu, out_cpu, type, label + " forward"));
      auto g_cpu = gradients(out_cpu, {l_cpu, s_cpu}, upstream);
      auto g_gpu = gradients(out_gpu, {l_gpu, s_gpu}, upstream);
      EXPECT_TRUE(close(g_gpu[0], g_cpu[0], type, label + " d/dlogits"));
      EXPECT_TRUE(close(g_gpu[1], g_cpu[1], type, label + " d/dslopes"));
      auto again = gradients(plif_nll(l_gpu, s_gpu, targets.to(gpu), c.T), {l_gpu, s_gpu}, upstream);
      EXPECT_TRUE(torch::equal(again[0], g_gpu[0]) && torch::equal(again[1], g_gpu[1])) << label << ": a second run differs";
    }
  }
}

TEST(OpsCudaTest, MixtureNllMatchesCpu) {
  LMKIT_SKIP_WITHOUT_CUDA();
  torch::manual_seed(13);
  const torch::Device gpu(torch::kCUDA);
  const int64_t M = 37, K = 3, d = 16, N = 3001;
  const auto latent = torch::randn({M, K, d}, torch::kFloat64).tanh();
  const auto log_prior = torch::log_softmax(torch::randn({M, K}, torch::kFloat64), 1);
  const auto weight = torch::randn({N, d}, torch::kFloat64);
  const auto bias = torch::randn({N}, torch::kFloat64) * 0.1;
  const auto targets = torch::randint(N, {M}, torch::kInt64);
  const auto upstream = torch::randn({M}, torch::kFloat64);
  for (double kappa : {1.0, 2.0}) {
    for (bool with_bias : {true, false}) {
      for (auto type : kTypes) {
        const auto label = "mixture_nll " + std::string(c10::toString(type)) + " kappa=" +
                           std::to_string(kappa) + (with_bias ? "" : " no bias");
        std::vector<torch::Tensor> cpu_in, gpu_in;
        for (const auto& t : {latent, log_prior, weight, bias}) {
          cpu_in.push_back(leaf(t, type, torch::kCPU));
          gpu_in.push_back(leaf(t, type, gpu));
        }
        const auto b_cpu = with_bias ? cpu_in[3] : torch::Tensor();
        const auto b_gpu = with_bias ? gpu_in[3] : torch::Tensor();
        auto nll_cpu = mixture_nll(cpu_in[0], cpu_in[1], cpu_in[2], b_cpu, targets, 0.25, kappa);
        auto nll_gpu = mixture_nll(gpu_in[0], gpu_in[1], gpu_in[2], b_gpu, targets.to(gpu), 0.25, kappa);
        EXPECT_TRUE(close(nll_gpu, nll_cpu, type, label + " forward"));
        const size_t inputs = with_bias ? 4 : 3;
        auto g_cpu = gradients(nll_cpu, {cpu_in.begin(), cpu_in.begin() + inputs}, upstream);
        auto g_gpu = gradients(nll_gpu, {gpu_in.begin(), gpu_in.begin() + inputs}, upstream);
        const char* names[] = {" d/dlatent", " d/dlog_prior", " d/dweight", " d/dbias"};
        for (size_t i = 0; i < inputs; ++i)
          EXPECT_TRUE(close(g_gpu[i], g_cpu[i], type, label + names[i]));
      }
    }
  }
}

TEST(OpsCudaTest, MixtureNllFiniteForHugeLogits) {
  LMKIT_SKIP_WITHOUT_CUDA();
  torch::manual_seed(14);
  const torch::Device gpu(torch::kCUDA);
  auto latent = torch::randn({3, 2, 3}, gpu).tanh();
  auto log_prior = torch::log_softmax(torch::randn({3, 2}, gpu), 1);
  auto weight = (torch::randn({5, 3}, gpu) * 1e4).requires_grad_();
  auto targets = torch::randint(5, {3}, torch::TensorOptions().dtype(torch::kInt64).device(gpu));
  auto nll = mixture_nll(latent, log_prior, weight, torch::Tensor(), targets, 0.0, 2.0);
  EXPECT_TRUE(torch::isfinite(nll).all().item<bool>());
  nll.sum().backward();
  EXPECT_TRUE(torch::isfinite(weight.grad()).all().item<bool>());
}

TEST(OpsCudaTest, EveryFusedKernelPassesItsSelfCheck) {
  LMKIT_SKIP_WITHOUT_CUDA();
  const torch::Device gpu(torch::kCUDA);
  for (const auto& op : fused_ops()) {
    // The float32 composite is what serves where a kernel is missing or fails: held to the same bar.
    const auto composite = compare_composite(op, gpu, torch::kFloat32);
    EXPECT_TRUE(composite.passed) << op << " composite: " << composite.worst << " off by " << composite.error
                                  << " " << composite.failure;
    if (!has_fused_kernel(op, gpu)) continue;  // a build without lmkit's CUDA kernels
    for (auto type : kTypes) {
      const auto r = compare_fused_kernel(op, gpu, type);
      EXPECT_TRUE(r.passed) << op << " " << r.dtype << ": " << r.worst << " off by " << r.error << " (tolerance "
                            << r.tolerance << ") " << r.failure;
    }
  }
}

// The allocator's counts follow a tensor of known size: allocated rises by its bytes (the
// allocator rounds a 4 MiB request to itself), the peak holds after it is freed, and a reset
// starts the peak again at what is live.
TEST(OpsCudaTest, DeviceMemoryCountsLiveTensorsAndTheirPeak) {
  LMKIT_SKIP_WITHOUT_CUDA();
  torch::cuda::synchronize();
#ifdef LMKIT_OPS_CUDA
  // A cached free block left by an earlier test in this process could serve the request whole
  // (larger than asked): the exact counts below need the cache empty.
  c10::cuda::CUDACachingAllocator::emptyCache();
#endif
  reset_peak_device_memory("cuda");
  const auto before = device_memory("cuda");
  EXPECT_EQ(before.peak_allocated, before.allocated);
  constexpr std::int64_t bytes = 4 << 20;
  {
    const auto block = torch::empty({bytes / 4}, torch::TensorOptions().dtype(torch::kFloat32).device(torch::kCUDA));
    const auto during = device_memory("cuda");
    EXPECT_EQ(during.allocated - before.allocated, bytes);
    EXPECT_GE(during.reserved, during.allocated);
    EXPECT_EQ(during.device, "cuda:" + std::to_string(block.device().index()));
  }
  const auto after = device_memory("cuda:0");
  EXPECT_EQ(after.allocated, before.allocated);
  EXPECT_EQ(after.peak_allocated, before.allocated + bytes);
  reset_peak_device_memory("cuda:0");
  EXPECT_EQ(device_memory("cuda").peak_allocated, after.allocated);
}

}  // namespace
}  // namespace lmkit::ops
