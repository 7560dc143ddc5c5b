// Argmaxable words against independent truths: LPs with closed-form optima, convex hulls computed
// by Andrew's monotone chain, a closed-form 1-D box case, and brute force over a grid of h.
#include "runtime/models/awd_lstm.h"
#include "runtime/analysis/argmaxable.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <set>
#include <vector>

#include "runtime/analysis/linear_program.h"
#include "runtime/core/error.h"
#include "runtime/heads/head_registry.h"

namespace lmkit::analysis {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

TEST(LinearProgramTest, FindsTheVertexOptimumOfATwoVariableProgram) {
  // max x + y  s.t.  x + 2y ≤ 4,  3x + y ≤ 6,  x, y ≥ 0: the rows meet at (8/5, 6/5), objective 14/5.
  LinearProgram lp(2);
  lp.set_bounds(0, 0.0, kInf);
  lp.set_bounds(1, 0.0, kInf);
  lp.set_objective(0, 1.0);
  lp.set_objective(1, 1.0);
  lp.add_row({1.0, 2.0}, 4.0);
  lp.add_row({3.0, 1.0}, 6.0);
  ASSERT_EQ(lp.solve(), LinearProgram::Status::kOptimal);
  EXPECT_NEAR(lp.objective(), 14.0 / 5.0, 1e-12);
  EXPECT_NEAR(lp.solution()[0], 8.0 / 5.0, 1e-12);
  EXPECT_NEAR(lp.solution()[1], 6.0 / 5.0, 1e-12);
  // A cut added after the solve (x ≤ 1) is honoured by the warm re-solve: optimum (1, 3/2), 5/2.
  lp.add_row({1.0, 0.0}, 1.0);
  ASSERT_EQ(lp.solve(), LinearProgram::Status::kOptimal);
  EXPECT_NEAR(lp.objective(), 2.5, 1e-12);
  EXPECT_EQ(lp.rows(), 3);
}

TEST(LinearProgramTest, ReportsInfeasibleAndUnboundedPrograms) {
  LinearProgram infeasible(1);
  infeasible.set_bounds(0, 0.0, kInf);
  infeasible.add_row({1.0}, -1.0);  // x ≤ −1 and x ≥ 0
  EXPECT_EQ(infeasible.solve(), LinearProgram::Status::kInfeasible);
  LinearProgram unbounded(1);
  unbounded.set_objective(0, 1.0);
  unbounded.add_row({-1.0}, 0.0);  // x ≥ 0, nothing above
  EXPECT_EQ(unbounded.solve(), LinearProgram::Status::kUnbounded);
}

std::set<std::int64_t> ids_where(const torch::Tensor& mask) {
  std::set<std::int64_t> ids;
  for (std::int64_t i = 0; i < mask.numel(); ++i) {
    if (mask[i].item<bool>()) ids.insert(i);
  }
  return ids;
}

// The strict vertices of the convex hull of 2-D points (Andrew's monotone chain; collinear points
// on an edge are not vertices): an independent truth for the free region without bias.
std::set<std::int64_t> hull_vertices(const torch::Tensor& points) {
  const auto n = points.size(0);
  std::vector<std::int64_t> order(n);
  for (std::int64_t i = 0; i < n; ++i) order[i] = i;
  auto x = [&](std::int64_t i) { return points[i][0].item<double>(); };
  auto y = [&](std::int64_t i) { return points[i][1].item<double>(); };
  std::sort(order.begin(), order.end(), [&](auto a, auto b) { return x(a) < x(b) || (x(a) == x(b) && y(a) < y(b)); });
  auto cross = [&](std::int64_t o, std::int64_t a, std::int64_t b) {
    return (x(a) - x(o)) * (y(b) - y(o)) - (y(a) - y(o)) * (x(b) - x(o));
  };
  std::vector<std::int64_t> hull(2 * n);
  std::int64_t k = 0;
  for (std::int64_t i = 0; i < n; ++i) {
    while (k >= 2 && cross(hull[k - 2], hull[k - 1], order[i]) <= 0) --k;
    hull[k++] = order[i];
  }
  for (std::int64_t i = n - 2, lower = k + 1; i >= 0; --i) {
    while (k >= lower && cross(hull[k - 2], hull[k - 1], order[i]) <= 0) --k;
    hull[k++] = order[i];
  }
  return {hull.begin(), hull.begin() + (k - 1)};
}

TEST(ArgmaxableTest, WithoutBiasTheFreeArgmaxableWordsAreTheConvexHullsVertices) {
  torch::manual_seed(3);
  for (std::int64_t n : {7, 60, 400}) {
    const auto w = torch::randn({n, 2}, torch::kFloat64);
    ArgmaxableOptions o;
    o.region = HiddenRegion::kFree;
    o.tolerance = 1e-9;
    const auto r = argmaxable_words(w, torch::Tensor(), o);
    EXPECT_EQ(ids_where(r.argmaxable), hull_vertices(w)) << "n = " << n;
    EXPECT_EQ(r.by_scan + r.by_lp, n);
  }
}

TEST(ArgmaxableTest, AWordInsideTheHullIsUnargmaxableUnlessItsBiasLiftsIt) {
  // Six words on the unit circle and one at its centre.
  auto w = torch::zeros({7, 2}, torch::kFloat64);
  for (int k = 0; k < 6; ++k) {
    w[k][0] = std::cos(k * M_PI / 3);
    w[k][1] = std::sin(k * M_PI / 3);
  }
  for (auto region : {HiddenRegion::kFree, HiddenRegion::kBox}) {
    ArgmaxableOptions o;
    o.region = region;
    auto r = argmaxable_words(w, torch::Tensor(), o);
    EXPECT_EQ(ids_where(r.argmaxable.logical_not()), std::set<std::int64_t>{6}) << hidden_region_name(region);
    EXPECT_LE(r.margin[6].item<double>(), o.tolerance);
    // A bias of 0.5 on the centre: at h = 0 it leads by 0.5, so every word is argmaxable.
    auto b = torch::zeros({7}, torch::kFloat64);
    b[6] = 0.5;
    r = argmaxable_words(w, b, o);
    EXPECT_TRUE(r.argmaxable.all().item<bool>()) << hidden_region_name(region);
  }
}

TEST(ArgmaxableTest, TheBoxExcludesAWordThatNeedsALargeState) {
  // 1-D logits 0, h + 0.5, 2h − 10: word 2 leads only for h > 10.5.
  const auto w = torch::tensor({0.0, 1.0, 2.0}, torch::kFloat64).unsqueeze(1);
  const auto b = torch::tensor({0.0, 0.5, -10.0}, torch::kFloat64);
  ArgmaxableOptions box;
  auto r = argmaxable_words(w, b, box);
  EXPECT_EQ(ids_where(r.argmaxable), (std::set<std::int64_t>{0, 1}));
  // Its best lead in [−1, 1]: max_h min(2h − 10, h − 10.5) = −9.5 at h = 1 (all rows are in its LP).
  EXPECT_NEAR(r.margin[2].item<double>(), -9.5, 1e-9);
  // Word 0's best witness is h = −1 (lead 0.5) or any h < −0.5; word 1's lead at its witness is positive.
  EXPECT_GT(r.margin[0].item<double>(), 0.0);
  ArgmaxableOptions free;
  free.region = HiddenRegion::kFree;
  r = argmaxable_words(w, b, free);
  EXPECT_TRUE(r.argmaxable.all().item<bool>());
  EXPECT_LE(r.margin.max().item<double>(), 1.0);  // the free region's cap
}

TEST(ArgmaxableTest, TiedWordsAreNeverTheStrictTopOne) {
  auto w = torch::tensor({{1.0, 0.0}, {1.0, 0.0}, {-1.0, 0.0}, {0.0, 1.0}}, torch::kFloat64);
  const auto r = argmaxable_words(w, torch::Tensor(), ArgmaxableOptions{});
  EXPECT_EQ(ids_where(r.argmaxable), (std::set<std::int64_t>{2, 3}));
}

TEST(ArgmaxableTest, AgreesWithBruteForceOverAGridOfTheBox) {
  torch::manual_seed(11);
  const std::int64_t n = 14, steps = 401;
  // Words near each other with spread biases: some are squeezed out of the box, some are not.
  const auto w = torch::randn({n, 2}, torch::kFloat64);
  const auto b = 1.5 * torch::randn({n}, torch::kFloat64);
  ArgmaxableOptions o;
  const auto r = argmaxable_words(w, b, o);
  const auto axis = torch::linspace(-1.0, 1.0, steps, torch::kFloat64);
  const auto grid = torch::stack({axis.repeat_interleave(steps), axis.repeat({steps})}, 1);  // [steps², 2]
  const auto logits = torch::addmm(b, grid, w.t());
  const auto top = std::get<0>(logits.topk(2, 1));
  const auto strict = (top.select(1, 0) - top.select(1, 1)).gt(1e-9);
  const auto winners = ids_where(torch::zeros({n}, torch::kBool).index_fill(0, logits.argmax(1).masked_select(strict), true));
  const auto argmaxable = ids_where(r.argmaxable);
  // Every word that wins somewhere on the grid is argmaxable ...
  for (auto j : winners) EXPECT_TRUE(argmaxable.count(j)) << "word " << j << " wins on the grid";
  // ... and every argmaxable word with a clear lead wins on the grid (its region holds a grid point).
  for (auto j : argmaxable) {
    if (r.margin[j].item<double>() > 0.05) {
      EXPECT_TRUE(winners.count(j)) << "word " << j;
    }
  }
  EXPECT_GT(argmaxable.size(), 1u);
  // Witnesses lie in the box and make their word the top-1 by its margin.
  for (auto j : argmaxable) {
    const auto h = r.witness[j];
    EXPECT_LE(h.abs().max().item<double>(), 1.0 + 1e-9);
    const auto l = torch::addmv(b, w, h);
    auto others = l.clone();
    others[j] = -kInf;
    EXPECT_NEAR((l[j] - others.max()).item<double>(), r.margin[j].item<double>(), 1e-9);
  }
}

TEST(ArgmaxableTest, CuttingPlanesDecideAsTheWholeProgramDoes) {
  torch::manual_seed(5);
  // Many words in 3-D, some pulled inside: a word's first LP holds 4 rivals, later rounds add more.
  auto w = torch::randn({300, 3}, torch::kFloat64);
  w.narrow(0, 0, 150).mul_(0.3);
  const auto b = 0.1 * torch::randn({300}, torch::kFloat64);
  for (auto region : {HiddenRegion::kFree, HiddenRegion::kBox}) {
    ArgmaxableOptions few, all;
    few.region = all.region = region;
    few.rivals = 4;
    all.rivals = 299;
    const auto a = argmaxable_words(w, b, few);
    const auto c = argmaxable_words(w, b, all);
    EXPECT_TRUE(torch::equal(a.argmaxable, c.argmaxable)) << hidden_region_name(region);
    EXPECT_GT(a.by_lp, 0) << "the scan decided everything: the test does not reach the LPs";
    EXPECT_GT((~a.argmaxable).sum().item<std::int64_t>(), 0) << hidden_region_name(region);
    EXPECT_GT(a.lp_rows_max, 4) << "no cutting-plane round added rows";
  }
}

TEST(ArgmaxableTest, RejectsBadInputsByName) {
  const auto w = torch::randn({4, 2});
  EXPECT_THROW(argmaxable_words(torch::randn({4}), torch::Tensor(), {}), UsageError);
  EXPECT_THROW(argmaxable_words(w, torch::zeros({3}), {}), UsageError);
  auto nan = w.clone();
  nan[1][1] = std::nan("");
  try {
    argmaxable_words(nan, torch::Tensor(), {});
    FAIL() << "a NaN weight was accepted";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("non-finite"), std::string::npos) << e.what();
  }
  ArgmaxableOptions o;
  o.bound = 0;
  EXPECT_THROW(argmaxable_words(w, torch::Tensor(), o), UsageError);
  EXPECT_THROW(parse_hidden_region("ball"), UsageError);
}

// The premise of model_argmaxable: a head declared monotone ranks words as its logits do. In
// float64 and at moderate logits: in float32 a saturating f (the sigmoid head's log σ(l) at l ≳ 17)
// rounds the top words' log-probabilities to the same value, a tie the exact analysis does not model.
TEST(ArgmaxableTest, MonotoneHeadsHaveTheArgmaxOfTheirLogits) {
  torch::manual_seed(2);
  Decoder decoder{torch::randn({50, 8}, torch::kFloat64), torch::randn({50}, torch::kFloat64)};
  const auto h = torch::randn({64, 8}, torch::kFloat64) * 2;
  int checked = 0;
  for (const auto* kind : registered_head_kinds()) {
    if (!kind->capabilities.monotone) continue;
    auto head = make_head({{"kind", kind->kind}}, 8, 8);
    head->to(torch::kFloat64);
    head->eval();
    torch::NoGradGuard no_grad;
    EXPECT_TRUE(torch::equal(head->log_probs(h, decoder).argmax(1), decoder.logits(h).argmax(1))) << kind->kind;
    ++checked;
  }
  EXPECT_GE(checked, 4);
}

LanguageModel small_model(const nlohmann::json& head) {
  torch::manual_seed(4);
  LanguageModelOptions o;
  o.encoder(AwdLstmOptions().vocab_size(12).emb(3).nhid(6).nhidlast(3).nlayers(2)
                .dropout(0).dropouth(0).dropouti(0).dropoute(0).wdrop(0));
  o.head(head);
  return LanguageModel(o);
}

// The decision model_argmaxable makes from the registry: exact for a monotone head, observed on
// contexts for the others (which need them).
TEST(ArgmaxableTest, AModelIsDecidedExactlyOrObservedAsItsHeadAllows) {
  auto softmax = small_model({{"kind", "softmax"}});
  const auto exact = model_argmaxable(softmax, {}, torch::Tensor(), {});
  EXPECT_EQ(exact.method, "lp");
  const auto decoder = softmax->decoder();
  EXPECT_TRUE(torch::equal(exact.argmaxable, argmaxable_words(decoder.weight, decoder.bias, {}).argmaxable));
  EXPECT_NE(exact.note.find("decided exactly by linear programs"), std::string::npos);

  auto mos = small_model({{"kind", "mos"}, {"K", 2}});
  try {
    model_argmaxable(mos, {}, torch::Tensor(), {});
    FAIL() << "a mixture was decided without contexts";
  } catch (const UsageError& e) {
    const std::string text = e.what();
    EXPECT_NE(text.find("the mos head is not a monotone function of one logit matrix"), std::string::npos) << text;
    EXPECT_NE(text.find("softmax"), std::string::npos) << text;  // the heads that need none
    EXPECT_NE(text.find("pass tokens = corpus.test"), std::string::npos) << text;
  }
  const auto tokens = torch::arange(40, torch::kInt64) % 12;
  LogpMatrixOptions sampling;
  sampling.bptt = 5;
  const auto observed = model_argmaxable(mos, {}, tokens, sampling);
  EXPECT_EQ(observed.method, "sampled");
  EXPECT_EQ(observed.top1_counts.sum().item<std::int64_t>(), 39);  // one top-1 per context
  EXPECT_TRUE(torch::equal(observed.argmaxable, observed.top1_counts.gt(0)));
}

}  // namespace
}  // namespace lmkit::analysis
