// check_nll_matches_log_probs: an nll that is −log_probs[target] up to rounding passes; one that is
// not is refused with the worst row, its target and both values.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <limits>
#include <string>

#include "runtime/core/error.h"
#include "runtime/heads/method_agreement.h"

namespace lmkit {
namespace {

struct Case {
  torch::Tensor log_probs, targets, nll;
};

Case agreeing(torch::ScalarType dtype) {
  torch::manual_seed(1);
  Case c;
  const auto logits = torch::randn({6, 50}, torch::TensorOptions().dtype(torch::kFloat64)) * 4;
  c.targets = torch::randint(0, 50, {6}, torch::TensorOptions().dtype(torch::kInt64));
  // The nll written the other usual way: logsumexp minus the target's logit.
  c.nll = (logits.logsumexp(1) - logits.gather(1, c.targets.reshape({-1, 1})).reshape({-1})).to(dtype);
  c.log_probs = torch::log_softmax(logits, 1).to(dtype);
  return c;
}

TEST(MethodAgreementTest, AnNllComputedAnotherWayAgreesInEitherPrecision) {
  for (auto dtype : {torch::kFloat32, torch::kFloat64}) {
    const auto c = agreeing(dtype);
    EXPECT_NO_THROW(check_nll_matches_log_probs(c.nll, c.log_probs, c.targets, "nll"));
  }
}

TEST(MethodAgreementTest, ADisagreementNamesTheWorstRowItsTargetAndBothValues) {
  auto c = agreeing(torch::kFloat64);
  auto wrong = c.nll.clone();
  wrong[3] = 0.0;  // row 4 (1-based) claims certainty
  const double truth = c.nll[3].item<double>();
  try {
    check_nll_matches_log_probs(wrong, c.log_probs, c.targets, "my nll");
    FAIL() << "accepted";
  } catch (const UsageError& e) {
    const std::string text = e.what();
    EXPECT_NE(text.find("my nll disagrees with the head's forward: at row 4 (target " +
                        std::to_string(c.targets[3].item<std::int64_t>()) + ") nll gives 0 but"),
              std::string::npos)
        << text;
    EXPECT_NE(text.find(fmt::format("{:.6g}", truth)), std::string::npos) << text;
    EXPECT_NE(text.find("over 6 rows"), std::string::npos) << text;
  }
}

TEST(MethodAgreementTest, TheToleranceScalesWithTheValuesAndIsTightInFloat64) {
  auto c = agreeing(torch::kFloat64);
  const double scale = 1 + c.nll.abs().max().item<double>();
  // Just inside and just outside 1e-8·(1 + max) in float64.
  EXPECT_NO_THROW(check_nll_matches_log_probs(c.nll + 0.5e-8 * scale, c.log_probs, c.targets, "nll"));
  EXPECT_THROW(check_nll_matches_log_probs(c.nll + 2e-8 * scale, c.log_probs, c.targets, "nll"), UsageError);
  // A NaN is never agreement.
  auto nan = c.nll.clone();
  nan[0] = std::numeric_limits<double>::quiet_NaN();
  EXPECT_THROW(check_nll_matches_log_probs(nan, c.log_probs, c.targets, "nll"), UsageError);
}

// The normalization check of a Lua head's forward: every row on the first call, a rotating sample of
// at most kSampledRows rows later, which reaches every row within ceil(M / kSampledRows) calls and
// names the row by its place in the whole output.
TEST(MethodAgreementTest, TheNormalizationCheckSamplesRowsAfterTheFirstCallAndReachesEveryRow) {
  const std::int64_t M = 300, N = 7, bad = 211;
  auto log_probs = torch::log_softmax(torch::randn({M, N}, torch::kFloat64), 1).to(torch::kFloat32);
  EXPECT_NO_THROW(check_log_probabilities(log_probs, "f", 0));
  EXPECT_NO_THROW(check_log_probabilities(log_probs, "f", 5));
  log_probs[bad] += 0.5;
  const auto names_the_row = [&](std::int64_t call) {
    try {
      check_log_probabilities(log_probs, "f", call);
      return false;
    } catch (const UsageError& e) {
      EXPECT_NE(std::string(e.what()).find("row " + std::to_string(bad + 1) + " has logsumexp 0.5"), std::string::npos) << e.what();
      return true;
    }
  };
  EXPECT_TRUE(names_the_row(0));  // the first call: every row
  const std::int64_t stride = (M + kSampledRows - 1) / kSampledRows;
  int found = 0;
  for (std::int64_t call = 1; call <= stride; ++call) found += names_the_row(call) ? 1 : 0;
  EXPECT_EQ(found, 1);  // exactly one of `stride` consecutive calls samples the row
  EXPECT_EQ(names_the_row(bad % stride + stride), true);
}

}  // namespace
}  // namespace lmkit
