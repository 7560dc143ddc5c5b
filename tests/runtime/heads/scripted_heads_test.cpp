// Heads given as functions (what lmkit.heads.pointwise and .custom build from Lua), here from C++
// lambdas: what they return is checked where it enters, and a custom nll is compared with its own
// forward on the first batch only.
#include "runtime/heads/scripted_heads.h"

#include <gtest/gtest.h>

#include "tests/support/failure_text.h"

namespace lmkit {
namespace {

using lmkit::testing::contains;
using lmkit::testing::failure;

Decoder decoder() {
  torch::manual_seed(3);
  return {torch::randn({7, 4}, torch::kFloat64), torch::randn({7}, torch::kFloat64)};
}

TEST(ScriptedHeadsTest, PointwiseHeadIsTheLogSoftmaxOfItsFunction) {
  const auto d = decoder();
  const auto h = torch::randn({2, 3, 4}, torch::kFloat64);
  PointwiseHeadImpl head([](const torch::Tensor& l) { return 2 * l; });
  EXPECT_TRUE(torch::allclose(head.log_probs(h, d), torch::log_softmax(2 * d.logits(h.reshape({-1, 4})), 1)));
  PointwiseHeadImpl narrow([](const torch::Tensor& l) { return l.narrow(1, 0, 5); });
  EXPECT_TRUE(contains(failure([&] { narrow.log_probs(h, d); }), "the pointwise head's function"));
}

TEST(ScriptedHeadsTest, CustomHeadChecksForwardAndComparesItsNllOnceWithIt) {
  const auto d = decoder();
  const auto h = torch::randn({5, 4}, torch::kFloat64);
  const auto targets = torch::tensor({0, 6, 2, 3, 1});
  int nll_calls = 0;
  CustomHeadFunctions f;
  f.name = "mine";
  f.forward = [](const torch::Tensor& x, const torch::Tensor& w, const torch::Tensor& b) {
    return torch::log_softmax(torch::addmm(b, x, w.t()), 1);
  };
  f.nll = [&](const torch::Tensor& x, const torch::Tensor& y, const torch::Tensor& w, const torch::Tensor& b) {
    ++nll_calls;
    // Right on the first call; off by 0.5 later: only the first batch is compared.
    const auto right = -torch::log_softmax(torch::addmm(b, x, w.t()), 1).gather(1, y.unsqueeze(1)).squeeze(1);
    return nll_calls == 1 ? right : right + 0.5;
  };
  CustomHeadImpl head(f);
  EXPECT_EQ(head.config()["name"], "mine");
  EXPECT_EQ(failure([&] { head.nll(h, targets, d); }), "(no error)");
  EXPECT_EQ(failure([&] { head.nll(h, targets, d); }), "(no error)");

  nll_calls = 1;  // every call off by 0.5: the first batch's comparison refuses it
  CustomHeadImpl wrong(f);
  EXPECT_TRUE(contains(failure([&] { wrong.nll(h, targets, d); }), "custom head 'mine': nll(h, targets, weight, bias)"));

  f.forward = [](const torch::Tensor& x, const torch::Tensor& w, const torch::Tensor& b) { return torch::addmm(b, x, w.t()); };
  CustomHeadImpl unnormalized(f);
  EXPECT_TRUE(contains(failure([&] { unnormalized.log_probs(h, d); }), "forward(h, weight, bias)"));
}

TEST(ScriptedHeadsTest, CustomHeadParametersMustBeLeavesThatRequireGrad) {
  CustomHeadFunctions f;
  f.forward = [](const torch::Tensor& x, const torch::Tensor&, const torch::Tensor&) { return x; };
  f.parameters = {torch::zeros({3}, torch::requires_grad())};
  CustomHeadImpl head(f);
  EXPECT_EQ(head.parameters().size(), 1U);
  f.parameters = {torch::zeros({3})};
  EXPECT_TRUE(contains(failure([&] { CustomHeadImpl no_grad(f); }), "custom head 'custom': parameters[1]"));
}

}  // namespace
}  // namespace lmkit
