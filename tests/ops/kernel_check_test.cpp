// The fused kernels' self-check (ops/kernel_check.h), proven on the CPU kernels: they pass their
// own check; a deliberately wrong kernel (a fault injected into its results) is caught on first
// use, warned about once per device and dtype, and replaced by the ATen composite — or is an error
// in strict mode, or used unchecked when the check is off.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "ops/gss_log_softmax.h"
#include "ops/kernel_check.h"
#include "ops/mixture_nll.h"
#include "ops/plif.h"
#include "runtime/core/error.h"
#include "runtime/core/warning.h"

namespace lmkit::ops {
namespace {

class KernelCheckTest : public ::testing::Test {
 protected:
  void SetUp() override {
    saved_mode_ = kernel_check_mode();
    set_kernel_check_mode(KernelCheckMode::on);
    reset_kernel_checks();
    previous_handler_ = set_warning_handler([this](const std::string& m) { warnings_.push_back(m); });
  }
  void TearDown() override {
    set_warning_handler(previous_handler_);
    set_kernel_check_mode(saved_mode_);
    reset_kernel_checks();
  }

  std::vector<std::string> warnings_;

 private:
  KernelCheckMode saved_mode_ = KernelCheckMode::on;
  WarningHandler previous_handler_;
};

torch::Tensor logits(torch::ScalarType type) {
  torch::manual_seed(3);
  return (torch::randn({5, 40}, torch::TensorOptions().dtype(torch::kFloat64)) * 4).to(type);
}

torch::Tensor composite(const torch::Tensor& l, double c, double k) {
  return torch::log_softmax(gss_transform(l, c, k), -1);
}

TEST_F(KernelCheckTest, CpuKernelsPassTheirOwnCheck) {
  const torch::Device cpu(torch::kCPU);
  for (const std::string op : {"gss_log_softmax", "plif"}) {
    for (auto type : {torch::kFloat32, torch::kFloat64}) {
      const auto r = compare_fused_kernel(op, cpu, type);
      EXPECT_TRUE(r.passed) << op << " " << r.dtype << ": " << r.worst << " " << r.error << " " << r.failure;
      EXPECT_TRUE(r.failure.empty());
      EXPECT_LE(r.error, r.tolerance);
      EXPECT_FALSE(r.worst.empty());
      EXPECT_EQ(r.device, "cpu");
    }
  }
}

// Every op's float32 ATen composite against the float64 reference, on the CPU (where mixture_nll
// has no kernel of its own, so this is the only check of its float32 precision here).
TEST_F(KernelCheckTest, CompositesInFloat32PassTheSameCheck) {
  const torch::Device cpu(torch::kCPU);
  for (const auto& op : fused_ops()) {
    const auto r = compare_composite(op, cpu, torch::kFloat32);
    EXPECT_TRUE(r.passed) << op << ": " << r.worst << " " << r.error << " " << r.failure;
    EXPECT_EQ(r.path, "ATen composite");
    EXPECT_GT(r.error, 0) << op << ": float32 against float64 cannot agree exactly";
    EXPECT_LE(r.error, r.tolerance);
  }
  EXPECT_THROW(compare_composite("plif", cpu, torch::kFloat64), UsageError);
  EXPECT_THROW(compare_composite("softmax", cpu, torch::kFloat32), UsageError);
}

TEST_F(KernelCheckTest, WhichOpsHaveTheirOwnKernels) {
  const torch::Device cpu(torch::kCPU), meta(torch::kMeta);
  EXPECT_EQ(fused_ops(), (std::vector<std::string>{"gss_log_softmax", "plif", "mixture_nll"}));
  EXPECT_TRUE(has_fused_kernel("gss_log_softmax", cpu));
  EXPECT_TRUE(has_fused_kernel("plif", cpu));
  EXPECT_FALSE(has_fused_kernel("mixture_nll", cpu));  // ATen ops on the CPU: nothing to check
  for (const auto& op : fused_ops()) EXPECT_FALSE(has_fused_kernel(op, meta)) << op;
  EXPECT_THROW(compare_fused_kernel("mixture_nll", cpu, torch::kFloat32), UsageError);
  EXPECT_THROW(compare_fused_kernel("softmax", cpu, torch::kFloat32), UsageError);
  EXPECT_THROW(compare_fused_kernel("plif", cpu, torch::kInt64), UsageError);
}

TEST_F(KernelCheckTest, AWrongKernelIsCaughtOnceAndTheCompositeServesInstead) {
  ScopedKernelFault wrong("gss_log_softmax", torch::kCPU, [](torch::Tensor& t) { t.add_(0.01); });
  const auto l = logits(torch::kFloat32);
  const auto first = gss_log_softmax(l, 0.5, 2.0);
  EXPECT_TRUE(torch::allclose(first, composite(l, 0.5, 2.0), 1e-5, 1e-5));  // not off by 0.01
  ASSERT_EQ(warnings_.size(), 1u);
  for (const char* part : {"gss_log_softmax", "cpu", "float32", "ATen composite", "LMKIT_KERNEL_CHECK"}) {
    EXPECT_NE(warnings_[0].find(part), std::string::npos) << part << " in: " << warnings_[0];
  }
  gss_log_softmax(l, 1.0, 3.0);  // the same device and dtype: no second check, no second warning
  EXPECT_EQ(warnings_.size(), 1u);
  // Gradients come from the composite too.
  auto x = l.clone().requires_grad_();
  auto y = l.clone().requires_grad_();
  auto g = torch::randn(l.sizes());
  const auto got = torch::autograd::grad({gss_log_softmax(x, 0.5, 2.0)}, {x}, {g})[0];
  const auto want = torch::autograd::grad({composite(y, 0.5, 2.0)}, {y}, {g})[0];
  EXPECT_TRUE(torch::allclose(got, want, 1e-5, 1e-6));
  // Another dtype is another check (and another warning).
  gss_log_softmax(logits(torch::kFloat64), 0.5, 2.0);
  EXPECT_EQ(warnings_.size(), 2u);
  const auto history = kernel_check_history();
  ASSERT_EQ(history.size(), 2u);
  EXPECT_FALSE(history[0].passed);
  EXPECT_GT(history[0].error, history[0].tolerance);
  EXPECT_EQ(history[1].dtype, "float64");
  // The other op on the CPU is unaffected.
  plif(torch::randn({30}), torch::ones({4}), 2.0);
  EXPECT_EQ(warnings_.size(), 2u);
  EXPECT_TRUE(kernel_check_history().back().passed);
}

TEST_F(KernelCheckTest, AKernelWrongOnlyInItsGradientIsCaught) {
  // Results pass through the fault in the order forward, backward, forward, backward, ...
  int call = 0;
  ScopedKernelFault wrong("plif", torch::kCPU, [&call](torch::Tensor& t) {
    if (call++ % 3 != 0) t.mul_(1.001);  // plif's three results per case: out, ∂/∂logits, ∂/∂slopes
  });
  const auto r = compare_fused_kernel("plif", torch::Device(torch::kCPU), torch::kFloat64);
  EXPECT_FALSE(r.passed);
  EXPECT_EQ(r.worst.rfind("∂/∂", 0), 0u) << r.worst;
  EXPECT_NEAR(r.error, 1e-3, 5e-4);
}

TEST_F(KernelCheckTest, APassingKernelIsTheOneThatRuns) {
  // A fault that changes nothing but counts: the check passes, and the calls after it go through
  // the fused kernel (1 result forward, 1 backward), not the composite.
  int results = 0;
  ScopedKernelFault counting("gss_log_softmax", torch::kCPU, [&results](torch::Tensor&) { ++results; });
  auto l = logits(torch::kFloat32).requires_grad_();
  gss_log_softmax(l.detach(), 0, 2);  // first use: the check, then this call
  ASSERT_EQ(kernel_check_history().size(), 1u);
  EXPECT_TRUE(kernel_check_history()[0].passed);
  const int after_check = results;
  gss_log_softmax(l, 0, 2).sum().backward();
  EXPECT_EQ(results - after_check, 2);
  EXPECT_TRUE(warnings_.empty());
}

TEST_F(KernelCheckTest, StrictModeMakesAMismatchAnErrorEveryTime) {
  set_kernel_check_mode(KernelCheckMode::strict);
  ScopedKernelFault wrong("plif", torch::kCPU, [](torch::Tensor& t) { t.neg_(); });
  const auto l = torch::randn({50});
  for (int i = 0; i < 2; ++i) {
    try {
      plif(l, torch::ones({8}), 3.0);
      ADD_FAILURE() << "a wrong kernel in strict mode must raise";
    } catch (const EnvironmentError& e) {
      const std::string text = e.what();
      EXPECT_NE(text.find("plif"), std::string::npos) << text;
      EXPECT_NE(text.find("strict"), std::string::npos) << text;
    }
  }
  EXPECT_TRUE(warnings_.empty());
  // An op without a mismatch still runs.
  EXPECT_NO_THROW(gss_log_softmax(logits(torch::kFloat32), 0, 2));
}

TEST_F(KernelCheckTest, OffTrustsTheKernelUnchecked) {
  set_kernel_check_mode(KernelCheckMode::off);
  ScopedKernelFault wrong("gss_log_softmax", torch::kCPU, [](torch::Tensor& t) { t.add_(0.25); });
  const auto l = logits(torch::kFloat64);
  const auto out = gss_log_softmax(l, 0, 2);
  EXPECT_TRUE(torch::allclose(out, composite(l, 0, 2) + 0.25, 1e-12, 1e-12));
  EXPECT_TRUE(warnings_.empty());
  EXPECT_TRUE(kernel_check_history().empty());
}

TEST_F(KernelCheckTest, TheCheckLeavesTheGlobalGeneratorAlone) {
  torch::manual_seed(42);
  const auto before = torch::randn({8});
  torch::manual_seed(42);
  gss_log_softmax(torch::zeros({2, 3}), 0, 2);  // first use: the check draws its own inputs here
  ASSERT_EQ(kernel_check_history().size(), 1u);
  EXPECT_TRUE(torch::equal(torch::randn({8}), before));
}

TEST_F(KernelCheckTest, RunsFromInferenceModeAndWithoutGrad) {
  {
    c10::InferenceMode inference;
    gss_log_softmax(torch::randn({2, 7}), 0, 2);
  }
  {
    torch::NoGradGuard no_grad;
    plif(torch::randn({9}), torch::ones({3}), 1.0);
  }
  const auto history = kernel_check_history();
  ASSERT_EQ(history.size(), 2u);
  for (const auto& r : history) EXPECT_TRUE(r.passed) << r.op << ": " << r.failure;
}

TEST_F(KernelCheckTest, ModeNames) {
  EXPECT_EQ(parse_kernel_check_mode("strict"), KernelCheckMode::strict);
  EXPECT_EQ(kernel_check_mode_name(parse_kernel_check_mode("off")), "off");
  try {
    parse_kernel_check_mode("yes");
    ADD_FAILURE();
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("'on', 'off' or 'strict', got 'yes'"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace lmkit::ops
