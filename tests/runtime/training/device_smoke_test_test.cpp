// `lmkit doctor`'s training check must tell a bug from chaos: each of its setups, run on the CPU
// with rounding-level noise (1e-6 relative on every parameter after each step) beside the same run
// without, stays within the check's tolerance — so a device that exceeds it computes something else.
// The setup the first GPU run used for PLIF (K = 1000 knots 0.02 apart, σ = 1) fails this test: the
// test can tell.
#include <gtest/gtest.h>

#include <iostream>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "runtime/heads/head_registry.h"
#include "runtime/models/encoder_registry.h"
#include "runtime/training/device_smoke_test.h"

namespace lmkit::training {
namespace {

const torch::Device kCpu(torch::kCPU);

TEST(DeviceSmokeTest, CoversEveryRegisteredHeadAndEveryOtherEncoder) {
  std::set<std::string> names;
  for (const auto& setup : default_smoke_setups()) names.insert(setup.name);
  for (const auto* kind : registered_head_kinds()) EXPECT_EQ(names.count(kind->kind), 1u) << kind->kind;
  for (const auto* kind : registered_encoder_kinds()) {
    if (kind->kind != kDefaultEncoderKind) {
      EXPECT_EQ(names.count(kind->kind + "+softmax"), 1u) << kind->kind;
    }
  }
  EXPECT_EQ(names.count("transformer+softmax"), 1u);
  EXPECT_EQ(names.size(), registered_head_kinds().size() + registered_encoder_kinds().size() - 1);
}

TEST(DeviceSmokeTest, TheCpuRepeatsEverySetupBitForBit) {
  SmokeTestOptions options;
  options.steps = 6;
  for (const auto& r : device_smoke_test(kCpu, options)) {
    EXPECT_TRUE(r.passed) << r.head << ": " << r.failure;
    EXPECT_EQ(r.max_difference, 0) << r.head;
    EXPECT_EQ(r.first_exceeding_step, -1) << r.head;
    EXPECT_EQ(r.device_losses.size(), 6u) << r.head;
  }
}

// What a long check shows as it goes: every step of both runs counted against one total, and each
// setup's result handed over as soon as it has one (before the next setup trains).
TEST(DeviceSmokeTest, ReportsEachStepAndEachResultAsItGoes) {
  SmokeTestOptions options;
  options.steps = 3;
  const auto setups = default_smoke_setups();
  options.setups = {setups.front(), setups.back()};
  std::vector<std::pair<std::int64_t, std::int64_t>> steps;
  std::vector<std::string> order;
  options.on_step = [&](std::int64_t done, std::int64_t total) {
    steps.emplace_back(done, total);
    order.push_back("step");
  };
  options.on_result = [&](const SmokeTestResult& r) { order.push_back("result " + r.head); };
  const auto results = device_smoke_test(kCpu, options);
  ASSERT_EQ(results.size(), 2u);
  ASSERT_EQ(steps.size(), 12u);  // 2 setups × 2 runs × 3 steps
  for (std::size_t i = 0; i < steps.size(); ++i) {
    EXPECT_EQ(steps[i].first, static_cast<std::int64_t>(i) + 1);
    EXPECT_EQ(steps[i].second, 12);
  }
  const std::vector<std::string> expected = {"step", "step", "step", "step", "step", "step", "result " + setups.front().name,
                                             "step", "step", "step", "step", "step", "step", "result " + setups.back().name};
  EXPECT_EQ(order, expected);
}

TEST(DeviceSmokeTest, EveryHeadIsInsensitiveToRoundingNoise) {
  SmokeTestOptions options;
  options.parameter_noise = 1e-6;
  for (const auto& r : device_smoke_test(kCpu, options)) {
    EXPECT_TRUE(r.passed) << r.head << ": max |Δloss| " << r.max_difference << " (tolerance " << options.tolerance
                          << "), first over it at step " << r.first_exceeding_step << " " << r.failure;
    // the noise did reach the run: the losses are not the same bits
    EXPECT_GT(r.max_difference, 0) << r.head;
    std::cout << "  " << r.head << ": max |Δloss| under 1e-6 noise " << r.max_difference << "\n";
  }
}

TEST(DeviceSmokeTest, AChaoticSetupIsToldApartAndItsFirstStepNamed) {
  SmokeTestOptions options;
  options.parameter_noise = 1e-6;
  options.setups = {{"plif K=1000 σ=1", {{"kind", "plif"}, {"K", 1000}, {"T", 10.0}, {"sigma", 1.0}, {"lr", 5.0}},
                      smoke_encoder(kDefaultEncoderKind), 5.0}};
  const auto results = device_smoke_test(kCpu, options);
  ASSERT_EQ(results.size(), 1u);
  EXPECT_FALSE(results[0].passed) << "max |Δloss| " << results[0].max_difference;
  EXPECT_GT(results[0].max_difference, options.tolerance);
  EXPECT_GE(results[0].first_exceeding_step, 2);  // the first loss is before any noise
  EXPECT_LE(results[0].first_exceeding_step, options.steps);
}

}  // namespace
}  // namespace lmkit::training
