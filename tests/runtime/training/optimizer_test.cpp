// The optimizers against their closed forms, and the switch policies on scripted validation losses.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "runtime/core/error.h"
#include "runtime/training/gradient_clipping.h"
#include "runtime/training/lr_schedule.h"
#include "runtime/training/optimizer.h"
#include "runtime/training/switch_policy.h"
#include "tests/support/same_bits.h"

namespace lmkit::training {
namespace {

const auto kDouble = torch::TensorOptions().dtype(torch::kFloat64);

torch::Tensor parameter(std::vector<double> values) {
  return torch::tensor(values, kDouble).requires_grad_(true);
}

void set_grad(torch::Tensor& p, std::vector<double> values) { p.mutable_grad() = torch::tensor(values, kDouble); }

TEST(OptimizerTest, SgdWithWeightDecayIsTheL2CoupledStep) {
  auto p = parameter({1.0, -2.0});
  Optimizer sgd("sgd", {{"main", {p}, 0.5, 0.1}});
  set_grad(p, {0.2, 0.4});
  sgd.step();
  // p − lr·(g + wd·p)
  EXPECT_DOUBLE_EQ(p[0].item<double>(), 1.0 - 0.5 * (0.2 + 0.1 * 1.0));
  EXPECT_DOUBLE_EQ(p[1].item<double>(), -2.0 - 0.5 * (0.4 + 0.1 * -2.0));
}

TEST(OptimizerTest, ParametersWithoutGradientAreNotStepped) {
  auto p = parameter({1.0});
  auto q = parameter({3.0});
  Optimizer sgd("sgd", {{"main", {p, q}, 1.0, 0.5}});
  set_grad(p, {1.0});
  sgd.step();
  EXPECT_DOUBLE_EQ(q.item<double>(), 3.0);  // no gradient: no decay either (torch.optim skips it)
}

// A captured step must not hold a parameter's first step (it makes the slot's state). A parameter
// that trains but has no gradient yet (unfrozen since the last step) steps at the next one: not
// started. One the loss leaves without a gradient at a step is unused, and no obstacle; frozen ones
// (requires_grad off) never are.
TEST(OptimizerTest, ATrainableParameterWithoutAGradientHasNotStartedUntilAStepShowsItUnused) {
  auto p = parameter({1.0});
  auto frozen = parameter({2.0}).requires_grad_(false);
  Optimizer asgd("asgd", {{"main", {p, frozen}, 0.5, 0.0}});
  EXPECT_FALSE(asgd.every_stepping_slot_started()) << "p trains and has not stepped";
  set_grad(p, {0.1});
  EXPECT_FALSE(asgd.every_stepping_slot_started());
  asgd.step();
  EXPECT_TRUE(asgd.every_stepping_slot_started()) << "p stepped; the frozen one never steps";

  // Unfrozen: it trains, has no gradient yet, and its first step is still to come.
  frozen.requires_grad_(true);
  EXPECT_FALSE(asgd.every_stepping_slot_started()) << "an unfrozen parameter would take its first step in the next (captured) step";
  // A step that leaves it without a gradient shows it unused by the loss.
  asgd.step();
  EXPECT_TRUE(asgd.every_stepping_slot_started());
  // Once it has a gradient, its first step is due again.
  set_grad(frozen, {0.3});
  EXPECT_FALSE(asgd.every_stepping_slot_started());
  asgd.step();
  EXPECT_TRUE(asgd.every_stepping_slot_started());
}

// ax after k steps is the mean of the iterates p_2..p_k (PyTorch's μ stays 1 for two steps).
TEST(OptimizerTest, AsgdAverageIsTheMeanOfTheIteratesFromTheSecondStep) {
  auto p = parameter({0.5, -1.0, 2.0});
  Optimizer asgd("asgd", {{"main", {p}, 0.1, 0.0}});
  std::vector<torch::Tensor> iterates;
  for (int k = 1; k <= 7; ++k) {
    set_grad(p, {std::sin(k), std::cos(k), 0.3 * k});
    asgd.step();
    iterates.push_back(p.detach().clone());
    if (k >= 2) {
      auto mean = torch::zeros_like(p);
      for (std::size_t i = 1; i < iterates.size(); ++i) mean += iterates[i];
      mean /= static_cast<double>(iterates.size() - 1);
      EXPECT_TRUE(torch::allclose(asgd.average_of(0, 0), mean, 1e-14, 1e-14)) << "after step " << k;
    } else {
      EXPECT_TRUE(torch::equal(asgd.average_of(0, 0), p.detach()));
    }
  }
}

// η lags the group's lr by one step, as in the reference (the per-window lr scaling acts late).
TEST(OptimizerTest, AsgdStepSizeIsThePreviousStepsLearningRate) {
  auto p = parameter({0.0});
  Optimizer asgd("asgd", {{"main", {p}, 1.0, 0.0}});
  const std::vector<double> lrs = {1.0, 2.0, 3.0, 4.0};
  double expected = 0;
  double eta = lrs[0];
  for (double lr : lrs) {
    asgd.groups()[0].lr = lr;
    if (lr == lrs[0]) eta = lr;  // the first step initializes η from the lr of that step
    set_grad(p, {1.0});
    asgd.step();
    expected -= eta;
    eta = lr;
    EXPECT_DOUBLE_EQ(p.item<double>(), expected);
  }
}

TEST(OptimizerTest, SwapWithAverageSwapsBack) {
  auto p = parameter({1.0, 2.0});
  Optimizer asgd("asgd", {{"main", {p}, 0.5, 0.0}});
  for (int k = 0; k < 3; ++k) {
    set_grad(p, {1.0, -1.0});
    asgd.step();
  }
  const auto raw = p.detach().clone();
  const auto average = asgd.average_of(0, 0).clone();
  asgd.swap_with_average();
  EXPECT_TRUE(torch::equal(p.detach(), average));
  asgd.swap_with_average();
  EXPECT_TRUE(torch::equal(p.detach(), raw));
}

TEST(OptimizerTest, AdamFirstStepMovesByLrTimesSign) {
  auto p = parameter({1.0, 1.0});
  Optimizer adam("adam", {{"main", {p}, 0.01, 0.0}});
  set_grad(p, {3.0, -0.5});
  adam.step();
  // m̂ = g, v̂ = g² → step lr·g/(|g| + ε)
  EXPECT_NEAR(p[0].item<double>(), 1.0 - 0.01, 1e-9);
  EXPECT_NEAR(p[1].item<double>(), 1.0 + 0.01, 1e-9);
}

TEST(OptimizerTest, AdamWIsTorchsAdamWStepForStep) {
  auto p = parameter({1.0, -2.0, 0.5});
  auto q = parameter({1.0, -2.0, 0.5});
  Optimizer ours("adamw", {{"main", {p}, 0.01, 0.1}});
  torch::optim::AdamW torchs({q}, torch::optim::AdamWOptions(0.01).weight_decay(0.1));
  for (int k = 0; k < 5; ++k) {
    const std::vector<double> g{0.3 * k - 0.2, 1.0 / (k + 1), -0.7};
    set_grad(p, g);
    set_grad(q, g);
    ours.step();
    torchs.step();
    EXPECT_LE((p - q).abs().max().item<double>(), 1e-15) << "step " << k + 1;
  }
  // Decoupled: with a zero gradient the first step only shrinks the weights, p·(1 − lr·wd).
  auto r = parameter({2.0});
  Optimizer decay("adamw", {{"main", {r}, 0.5, 0.2}});
  set_grad(r, {0.0});
  decay.step();
  EXPECT_DOUBLE_EQ(r.item<double>(), 2.0 * (1 - 0.5 * 0.2));
}

TEST(OptimizerTest, StateRoundTripsExactly) {
  auto p = parameter({1.0, 2.0});
  auto q = parameter({1.0, 2.0});
  Optimizer a("asgd", {{"main", {p}, 0.3, 0.01}});
  Optimizer b("asgd", {{"main", {q}, 0.3, 0.01}});
  for (int k = 0; k < 3; ++k) {
    set_grad(p, {0.1 * k, 1.0});
    a.step();
  }
  b.load_state(a.state_json(), a.state_tensors());
  torch::NoGradGuard no_grad;
  q.copy_(p);
  set_grad(p, {0.7, -0.2});
  set_grad(q, {0.7, -0.2});
  a.step();
  b.step();
  EXPECT_TRUE(torch::equal(p, q));
  EXPECT_TRUE(torch::equal(a.average_of(0, 0), b.average_of(0, 0)));
}

// The gated step (Optimizer::step(proceed), decided on the device): where proceed is true, the
// bits of step(), for every kind, with weight decay, over steps that take every branch (ASGD's
// first steps copy the iterate, later ones average; AdamW's decoupled decay); where it is false,
// with NaN and ∞ in the gradients, nothing changes: weights, ASGD averages, Adam moments.
TEST(OptimizerTest, AGatedStepIsTheStepOrNothing) {
  const auto kFloat = torch::TensorOptions().dtype(torch::kFloat32);
  for (const std::string kind : {"sgd", "asgd", "adam", "adamw"}) {
    SCOPED_TRACE(kind);
    torch::manual_seed(4);
    const auto start_a = torch::randn({3, 5}, kFloat), start_b = torch::randn({7}, kFloat);
    auto a1 = start_a.clone().requires_grad_(), b1 = start_b.clone().requires_grad_();
    auto a2 = start_a.clone().requires_grad_(), b2 = start_b.clone().requires_grad_();
    Optimizer plain(kind, {{"main", {a1}, 0.3, 0.01}, {"own", {b1}, 0.05, 0.0}});
    Optimizer gated(kind, {{"main", {a2}, 0.3, 0.01}, {"own", {b2}, 0.05, 0.0}});
    const auto yes = torch::tensor(true), no = torch::tensor(false);
    for (int step = 0; step < 5; ++step) {
      const auto ga = torch::randn({3, 5}, kFloat), gb = torch::randn({7}, kFloat);
      a1.mutable_grad() = ga.clone();
      b1.mutable_grad() = gb.clone();
      a2.mutable_grad() = ga.clone();
      b2.mutable_grad() = gb.clone();
      plain.step();
      gated.step(yes);
      EXPECT_TRUE(torch::equal(a1, a2)) << "step " << step;
      EXPECT_TRUE(torch::equal(b1, b2)) << "step " << step;
      // A halted step between them, with non-finite gradients: nothing moves.
      const auto weights = a2.detach().clone();
      auto state = gated.state_tensors();
      for (auto& [name, tensor] : state) tensor = tensor.clone();  // the step updates them in place
      auto bad = torch::randn({3, 5}, kFloat);
      bad[0][0] = std::numeric_limits<float>::quiet_NaN();
      bad[1][2] = std::numeric_limits<float>::infinity();
      a2.mutable_grad() = bad;
      b2.mutable_grad() = torch::full({7}, std::numeric_limits<float>::quiet_NaN(), kFloat);
      const auto before_b = b2.detach().clone();
      const auto scalars = gated.state_json();
      gated.step(no);
      EXPECT_TRUE(torch::equal(a2, weights)) << "step " << step;
      EXPECT_TRUE(torch::equal(b2, before_b)) << "step " << step;
      for (const auto& [name, tensor] : gated.state_tensors()) {
        ASSERT_TRUE(state.count(name)) << name;
        EXPECT_TRUE(torch::equal(tensor, state.at(name))) << name << " at step " << step;
      }
      // Only the host's counters moved; put them back, so that the two optimizers stay in step.
      gated.load_state(scalars, gated.state_tensors());
    }
  }
  Optimizer sgd("sgd", {{"main", {parameter({1.0})}, 0.1, 0.0}});
  EXPECT_THROW(sgd.step(torch::tensor(1.0)), UsageError);
}

// ASGD's η, μ and step count kept on the device (what a captured step reads at each replay) give
// the host's bits, the sign of a zero included: with a rate that changes every step (η lags it by
// one), the first steps' copy and the later averages, a halted step with non-finite gradients, the
// device scalars switched on before the first step and mid-run, and a reload of the state. One
// weight is −0 with a zero gradient throughout (ax ← p and a halted step must keep its sign).
TEST(OptimizerTest, AsgdScalarsOnTheDeviceGiveTheHostsBits) {
  using testing::same_bits;
  const auto kFloat = torch::TensorOptions().dtype(torch::kFloat32);
  torch::manual_seed(5);
  auto start_a = torch::randn({4, 6}, kFloat);
  start_a[0][0] = -0.0F;
  const auto start_b = torch::randn({9}, kFloat);
  std::vector<torch::Tensor> as, bs;
  std::vector<std::unique_ptr<Optimizer>> optimizers;  // on the host, on the device from the start, from step 3
  for (int i = 0; i < 3; ++i) {
    as.push_back(start_a.clone().requires_grad_());
    bs.push_back(start_b.clone().requires_grad_());
    optimizers.push_back(std::make_unique<Optimizer>(
        "asgd", std::vector<ParameterGroup>{{"main", {as.back()}, 0.3, 0.0}, {"own", {bs.back()}, 0.05, 0.01}}));
  }
  optimizers[1]->keep_scalars_on_device();
  const auto yes = torch::tensor(true), no = torch::tensor(false);
  for (int step = 0; step < 9; ++step) {
    SCOPED_TRACE("step " + std::to_string(step));
    if (step == 3) optimizers[2]->keep_scalars_on_device();
    if (step == 6) optimizers[1]->load_state(optimizers[1]->state_json(), optimizers[1]->state_tensors());
    const bool halted = step == 1 || step == 5;
    auto ga = torch::randn({4, 6}, kFloat), gb = torch::randn({9}, kFloat);
    ga[0][0] = 0.0F;
    if (halted) {
      ga[1][1] = std::numeric_limits<float>::quiet_NaN();
      gb[0] = std::numeric_limits<float>::infinity();
    }
    const auto a_before = as[1].detach().clone(), ax_before = optimizers[1]->average_of(0, 0).clone();
    for (int i = 0; i < 3; ++i) {
      optimizers[i]->groups()[0].lr = 0.3 + 0.07 * step;
      optimizers[i]->groups()[1].lr = 0.05 * (1 + step % 3);
      as[i].mutable_grad() = ga.clone();
      bs[i].mutable_grad() = gb.clone();
      optimizers[i]->step(halted ? no : yes);
    }
    EXPECT_TRUE(optimizers[1]->scalars_on_device());
    EXPECT_EQ(optimizers[2]->scalars_on_device(), step >= 3);
    for (int i = 1; i < 3; ++i) {
      EXPECT_TRUE(same_bits(as[0], as[i])) << i;
      EXPECT_TRUE(same_bits(bs[0], bs[i])) << i;
      EXPECT_TRUE(same_bits(optimizers[0]->average_of(0, 0), optimizers[i]->average_of(0, 0))) << i;
      EXPECT_TRUE(same_bits(optimizers[0]->average_of(1, 0), optimizers[i]->average_of(1, 0))) << i;
    }
    if (halted) {
      EXPECT_TRUE(same_bits(as[1], a_before));
      EXPECT_TRUE(same_bits(optimizers[1]->average_of(0, 0), ax_before));
    }
    // −0 stays the weight; the average is −0 after the first step's copy and the halted step
    // (later, −0 + μ·(+0) is +0 in every path).
    for (int i = 0; i < 3; ++i) {
      EXPECT_TRUE(std::signbit(as[i][0][0].item<float>())) << i;
      if (step <= 1) {
        EXPECT_TRUE(std::signbit(optimizers[i]->average_of(0, 0)[0][0].item<float>())) << i;
      }
    }
  }
  // The averages are not the iterates (the test went past ASGD's first two steps).
  EXPECT_FALSE(torch::equal(optimizers[1]->average_of(0, 0), as[1].detach()));
}

// A replayed step (its device work done, its host code not run) moves the host's numbers on as a
// step does: every parameter with a gradient counts one step; ASGD's η becomes the rate, μ 1/k.
// The host's copies then equal the device's scalars: a reload (which remakes those from these)
// changes no later step's bits. A parameter's first step is never a replay (it makes its state).
TEST(OptimizerTest, AReplayedStepMovesTheHostNumbersOnAsAStepDoes) {
  using testing::same_bits;
  for (const std::string kind : {"sgd", "asgd"}) {
    SCOPED_TRACE(kind);
    auto p1 = parameter({1.0, 2.0}), q1 = parameter({3.0});
    auto p2 = parameter({1.0, 2.0}), q2 = parameter({3.0});
    Optimizer stepped(kind, {{"main", {p1, q1}, 0.5, 0.0}});
    Optimizer replayed(kind, {{"main", {p2, q2}, 0.5, 0.0}});
    replayed.keep_scalars_on_device();
    for (int step = 0; step < 9; ++step) {
      for (auto* o : {&stepped, &replayed}) o->groups()[0].lr = 0.5 + step;
      set_grad(p1, {1.0, -1.0 + step});
      set_grad(p2, {1.0, -1.0 + step});
      if (step >= 1) {  // q trains from the second step on
        set_grad(q1, {0.5 * step});
        set_grad(q2, {0.5 * step});
      }
      EXPECT_EQ(replayed.every_stepping_slot_started(), step != 0 && step != 1);
      stepped.step();
      if (step < 2 || step == 5) {
        replayed.step();
      } else {
        const auto before = replayed.host_scalars();
        replayed.step();  // the device work a replay does
        replayed.set_host_scalars(before);
        replayed.count_replayed_step();
      }
      if (step == 6) replayed.load_state(replayed.state_json(), replayed.state_tensors());
      const auto a = stepped.host_scalars(), b = replayed.host_scalars();
      for (std::size_t i = 0; i < a[0].size(); ++i) {
        EXPECT_EQ(a[0][i].step, b[0][i].step) << "step " << step << ", parameter " << i;
        EXPECT_EQ(a[0][i].eta, b[0][i].eta) << "step " << step << ", parameter " << i;
        EXPECT_EQ(a[0][i].mu, b[0][i].mu) << "step " << step << ", parameter " << i;
      }
      EXPECT_TRUE(same_bits(p1, p2)) << "step " << step;
      EXPECT_TRUE(same_bits(q1, q2)) << "step " << step;
      if (kind == "asgd") {
        EXPECT_TRUE(same_bits(stepped.average_of(0, 0), replayed.average_of(0, 0))) << "step " << step;
        EXPECT_TRUE(same_bits(stepped.average_of(0, 1), replayed.average_of(0, 1))) << "step " << step;
      }
    }
    EXPECT_EQ(replayed.host_scalars()[0][1].step, 8);
  }
}

// The step's device scalars are the host's double arithmetic: finiteness, min(1, clip/(norm + 1e-6))
// and the scaling by it (a float32 gradient times the coefficient rounded to float32, as with a double).
TEST(GradientClippingTest, DeviceScalarsFollowTheHostsArithmetic) {
  const double inf = std::numeric_limits<double>::infinity(), nan = std::numeric_limits<double>::quiet_NaN();
  EXPECT_TRUE(all_finite(torch::tensor({1.5, -1e300, 0.0}, kDouble)).item<bool>());
  for (const double bad : {inf, -inf, nan}) {
    EXPECT_FALSE(all_finite(torch::tensor({1.0, bad}, kDouble)).item<bool>()) << bad;
    EXPECT_FALSE(all_finite(torch::tensor({bad}, torch::TensorOptions().dtype(torch::kFloat32))).item<bool>()) << bad;
  }
  for (const double norm : {0.0, 0.1, 0.25, 0.2500001, 3.7, 1e6}) {
    const double expected = std::min(1.0, 0.25 / (norm + 1e-6));
    EXPECT_EQ(clip_coefficient(torch::tensor(norm, kDouble), 0.25).item<double>(), expected) << norm;
  }
  EXPECT_TRUE(std::isnan(clip_coefficient(torch::tensor(nan, kDouble), 0.25).item<double>()));
  torch::manual_seed(2);
  auto a = torch::randn({50}).requires_grad_(), b = a.detach().clone().requires_grad_();
  a.mutable_grad() = torch::randn({50});
  b.mutable_grad() = a.grad().clone();
  std::vector<torch::Tensor> pa{a}, pb{b};
  const double coefficient = 0.25 / (3.7 + 1e-6);
  scale_gradients(pa, coefficient);
  scale_gradients(pb, torch::tensor(coefficient, kDouble));
  EXPECT_TRUE(torch::equal(a.grad(), b.grad()));
}

TEST(OptimizerTest, UnknownKindIsNamed) {
  try {
    Optimizer("rmsprop", {});
    FAIL();
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("'rmsprop'"), std::string::npos);
  }
}

// ---- switch policies ----

TEST(LrScheduleTest, WarmUpThenCosineOrInverseSquareRoot) {
  LrSchedule s;
  s.kind = "cosine";
  s.warmup = 4;
  s.lr = 2.0;
  s.min_lr = 0.2;
  s.total_steps = 104;
  EXPECT_DOUBLE_EQ(scheduled_lr(s, 0), 0.5);   // lr·1/4
  EXPECT_DOUBLE_EQ(scheduled_lr(s, 3), 2.0);   // the last warm-up step reaches lr
  EXPECT_DOUBLE_EQ(scheduled_lr(s, 4), 2.0);   // the cosine starts at lr
  EXPECT_NEAR(scheduled_lr(s, 54), 1.1, 1e-12);  // half way: (lr + lr_min)/2
  EXPECT_NEAR(scheduled_lr(s, 104), 0.2, 1e-12);
  EXPECT_NEAR(scheduled_lr(s, 500), 0.2, 1e-12);  // past the end: the floor
  s.kind = "inverse_sqrt";
  EXPECT_DOUBLE_EQ(scheduled_lr(s, 15), 2.0 * std::sqrt(4.0 / 16.0));
  s.kind = "constant";
  s.warmup = 0;
  EXPECT_DOUBLE_EQ(scheduled_lr(s, 77), 2.0);
}

TEST(SwitchPolicyTest, NonMonotoneFiresWhenWorseThanTheBestBeforeTheLastN) {
  // nonmono = 2: at epoch e the history holds v_1..v_{e−1}; compare with min(v_1..v_{e−3}).
  SwitchPolicy nt("nt", 2, 200);
  const std::vector<double> losses = {5.0, 4.0, 3.0, 3.5, 3.2, 3.1, 3.05};
  std::vector<bool> fired;
  for (std::size_t e = 0; e < losses.size(); ++e) fired.push_back(nt.observe(static_cast<int64_t>(e + 1), losses[e]));
  // epochs 1–3: history too short (needs > 2 entries). epoch 4: 3.5 > min(5) ? no (5 > 3.5).
  // epoch 5: 3.2 > min(5, 4) = 4 ? no. epoch 6: 3.1 > min(5, 4, 3) = 3 → fires.
  EXPECT_EQ(fired, (std::vector<bool>{false, false, false, false, false, true, true}));
}

TEST(SwitchPolicyTest, NonMonotoneNeverFiresWhileImproving) {
  SwitchPolicy nt("nt", 5, 200);
  for (int e = 1; e <= 50; ++e) EXPECT_FALSE(nt.observe(e, 10.0 / e));
}

TEST(SwitchPolicyTest, EpochTriggeredFiresAtItsEpochOnly) {
  SwitchPolicy et("et", 5, 3);
  std::vector<bool> fired;
  for (int e = 1; e <= 5; ++e) fired.push_back(et.observe(e, 1.0));
  EXPECT_EQ(fired, (std::vector<bool>{false, false, true, false, false}));
}

TEST(SwitchPolicyTest, NoneNeverFires) {
  SwitchPolicy none("none", 0, 1);
  for (int e = 1; e <= 5; ++e) EXPECT_FALSE(none.observe(e, static_cast<double>(e)));
}

TEST(SwitchPolicyTest, BadPolicyIsNamed) {
  EXPECT_THROW(SwitchPolicy("sometimes", 5, 200), UsageError);
  EXPECT_THROW(SwitchPolicy("et", 5, 0), UsageError);
}

}  // namespace
}  // namespace lmkit::training
