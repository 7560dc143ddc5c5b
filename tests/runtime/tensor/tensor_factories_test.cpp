// The tensors scripts make and the values they read back, as runtime functions: dtype defaults as
// torch's Python API chooses them, 1-based dimensions, and the refusals with their reasons.
#include "runtime/tensor/tensor_factories.h"

#include <gtest/gtest.h>

#include <limits>

#include <functional>
#include <string>

#include "runtime/core/error.h"
#include "runtime/tensor/nested_list.h"
#include "runtime/tensor/tensor_methods.h"

namespace lmkit {
namespace {

std::string refusal(const std::function<void()>& make) {
  try {
    make();
  } catch (const UsageError& e) {
    return e.what();
  }
  return "";
}

TEST(TensorFactoriesTest, SizesAreCheckedAndTheSpecApplied) {
  EXPECT_EQ(zeros_of(Sizes{{2, 3}}, {}).sizes(), (std::vector<std::int64_t>{2, 3}));
  EXPECT_EQ(ones_of(Sizes{{2}}, TensorSpec{{"float64", std::nullopt}, true}).scalar_type(), torch::kFloat64);
  EXPECT_TRUE(ones_of(Sizes{{2}}, TensorSpec{{}, true}).requires_grad());
  EXPECT_EQ(zeros_of(Sizes{}, {}).dim(), 0);  // no sizes: a 0-d tensor, as torch.zeros(())
  EXPECT_EQ(refusal([] { uniform_draws(Sizes{{2, -1}}, {}); }), "sizes must be non-negative integers (entry 2 is -1)");
  EXPECT_TRUE(torch::equal(identity_matrix(Sizes{{2}}, {}), torch::eye(2)));
  EXPECT_EQ(identity_matrix(Sizes{{2, 3}}, {}).sizes(), (std::vector<std::int64_t>{2, 3}));
  EXPECT_EQ(refusal([] { identity_matrix(Sizes{{1, 2, 3}}, {}); }), "eye(n[, m]) takes one or two sizes, got 3");
}

TEST(TensorFactoriesTest, TheDefaultDtypeFollowsTheValuesGiven) {
  EXPECT_EQ(filled(Sizes{{2}}, torch::Scalar(true), {}).scalar_type(), torch::kBool);
  EXPECT_EQ(filled(Sizes{{2}}, torch::Scalar(std::int64_t{3}), {}).scalar_type(), torch::kInt64);
  EXPECT_EQ(filled(Sizes{{2}}, torch::Scalar(1.5), {}).scalar_type(), torch::kFloat32);
  const auto integers = arange_of({{torch::Scalar(std::int64_t{1}), torch::Scalar(std::int64_t{4})}}, {});
  EXPECT_EQ(integers.scalar_type(), torch::kInt64);
  EXPECT_TRUE(torch::equal(integers, torch::tensor({1, 2, 3}, torch::kInt64)));  // half-open
  EXPECT_EQ(arange_of({{torch::Scalar(0.0), torch::Scalar(1.0), torch::Scalar(0.25)}}, {}).numel(), 4);
  EXPECT_EQ(refusal([] { arange_of({{torch::Scalar(std::int64_t{1}), torch::Scalar(std::int64_t{2}), torch::Scalar(0.0)}}, {}); }),
            "step must not be 0");
  EXPECT_EQ(refusal([] { arange_of({}, {}); }), "arange(stop) or arange(start, stop[, step])");
  // A number meets a tensor as a wrapped number: int32 * 2 stays int32, as in PyTorch.
  const auto doubled = torch::mul(torch::ones({2}, torch::kInt32), operand_tensor(torch::Scalar(std::int64_t{2})));
  EXPECT_EQ(doubled.scalar_type(), torch::kInt32);
  // Two numbers in where: the pair's promotion (Torch 1.13 alone fails an assertion on it).
  const auto chosen = selected_where(torch::tensor({true, false}), torch::Scalar(std::int64_t{1}), torch::Scalar(2.5));
  EXPECT_TRUE(torch::allclose(chosen, torch::tensor({1.0, 2.5}, chosen.scalar_type())));
}

// Integer bounds near ±2^63 give their exact values (as doubles, maxinteger − 2 and maxinteger are
// the same number and the range came back empty); a range int64 cannot count is refused.
TEST(TensorFactoriesTest, ArangeIsExactNearTheIntegerLimits) {
  const std::int64_t big = std::numeric_limits<std::int64_t>::max(), small = std::numeric_limits<std::int64_t>::min();
  const auto near_top = arange_of({{torch::Scalar(big - 2), torch::Scalar(big)}}, {});
  ASSERT_EQ(near_top.numel(), 2);
  EXPECT_EQ(near_top[0].item<std::int64_t>(), big - 2);
  EXPECT_EQ(near_top[1].item<std::int64_t>(), big - 1);
  const auto near_bottom = arange_of({{torch::Scalar(small + 3), torch::Scalar(small), torch::Scalar(std::int64_t{-2})}}, {});
  ASSERT_EQ(near_bottom.numel(), 2);
  EXPECT_EQ(near_bottom[1].item<std::int64_t>(), small + 1);
  EXPECT_EQ(arange_of({{torch::Scalar(std::int64_t{5}), torch::Scalar(std::int64_t{5})}}, {}).numel(), 0);
  EXPECT_EQ(arange_of({{torch::Scalar(std::int64_t{5}), torch::Scalar(std::int64_t{1})}}, {}).numel(), 0);
  EXPECT_TRUE(torch::equal(arange_of({{torch::Scalar(std::int64_t{1}), torch::Scalar(std::int64_t{8}), torch::Scalar(std::int64_t{3})}}, {}),
                           torch::tensor({1, 4, 7}, torch::kInt64)));
  EXPECT_THROW(arange_of({{torch::Scalar(small), torch::Scalar(big)}}, {}), UsageError);
}

TEST(TensorFactoriesTest, JoinsCountDimensionsFromOne) {
  const std::vector<torch::Tensor> pair = {torch::ones({2, 3}), torch::zeros({2, 3})};
  EXPECT_EQ(concatenated(pair, std::nullopt).sizes(), (std::vector<std::int64_t>{4, 3}));
  EXPECT_EQ(concatenated(pair, 2).sizes(), (std::vector<std::int64_t>{2, 6}));
  EXPECT_EQ(stacked(pair, 3).sizes(), (std::vector<std::int64_t>{2, 3, 2}));
  EXPECT_EQ(refusal([] { concatenated({}, std::nullopt); }), "needs at least one tensor");
}

TEST(TensorFactoriesTest, ValuesReadBackAsAScriptSeesThem) {
  EXPECT_EQ(std::get<bool>(item_of(torch::tensor(true))), true);
  EXPECT_EQ(std::get<std::int64_t>(item_of(torch::tensor(7, torch::kInt32))), 7);
  EXPECT_EQ(std::get<double>(item_of(torch::tensor(2.5))), 2.5);
  EXPECT_EQ(std::get<std::int64_t>(sizes_of(torch::ones({2, 5}), -1)), 5);
  EXPECT_EQ(converted(torch::ones({1}), std::string("float64")).scalar_type(), torch::kFloat64);
  EXPECT_EQ(converted(torch::ones({1}), std::string("cpu")).device(), torch::Device(torch::kCPU));
  EXPECT_NE(refusal([] { converted(torch::ones({1}), std::string("float33")); }).find("or a device"), std::string::npos);
  EXPECT_EQ(values_for_nested_lists(torch::ones({2}, torch::kInt16)).scalar_type(), torch::kInt64);
  EXPECT_EQ(values_for_nested_lists(torch::ones({2}, torch::kFloat16)).scalar_type(), torch::kFloat64);
  EXPECT_NE(refusal([] { values_for_nested_lists(torch::zeros({std::int64_t{1} << 30, 0})); }).find("1073741825 nested empty tables"),
            std::string::npos);
  auto leaf = torch::ones({2}, torch::requires_grad());
  auto made = (leaf * 2).sum();
  made.backward();
  const auto fields = autograd_fields(leaf);
  EXPECT_TRUE(fields.is_leaf && fields.requires_grad && fields.grad.defined() && !fields.grad_fn);
  const auto made_fields = autograd_fields(made);
  EXPECT_FALSE(made_fields.is_leaf);
  EXPECT_FALSE(made_fields.grad.defined());  // a non-leaf keeps none without retain_grad
  EXPECT_EQ(made_fields.grad_fn.value_or(""), "SumBackward0");
  EXPECT_TRUE(same_sizes_and_values(torch::ones({2}, torch::kInt64), torch::ones({2})));
  EXPECT_FALSE(same_sizes_and_values(torch::ones({2}), torch::ones({1, 2})));
}

}  // namespace
}  // namespace lmkit
