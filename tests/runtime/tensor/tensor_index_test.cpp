#include "runtime/tensor/tensor_index.h"

#include <gtest/gtest.h>

#include "runtime/core/error.h"

namespace lmkit {
namespace {

// 3x4 matrix 0..11, so every element names its own 0-based flat position.
torch::Tensor matrix() { return torch::arange(12).reshape({3, 4}); }

TEST(TensorIndexTest, SelectIsOneBasedAndNegativeFromTheEnd) {
  EXPECT_TRUE(torch::equal(index_tensor(matrix(), {IndexSpec::select(1)}), torch::arange(4)));
  EXPECT_TRUE(torch::equal(index_tensor(matrix(), {IndexSpec::select(-1)}), torch::arange(8, 12)));
  EXPECT_EQ(index_tensor(matrix(), {IndexSpec::select(2), IndexSpec::select(3)}).item<int64_t>(), 6);
}

TEST(TensorIndexTest, RangesAreInclusive) {
  const auto r = index_tensor(matrix(), {IndexSpec::all(), IndexSpec::range(2, 3)});
  EXPECT_TRUE(torch::equal(r, torch::tensor({1, 2, 5, 6, 9, 10}, torch::kInt64).reshape({3, 2})));
  EXPECT_EQ(index_tensor(matrix(), {IndexSpec::range(2)}).size(0), 2);  // 2..end
  EXPECT_TRUE(torch::equal(index_tensor(torch::arange(10), {IndexSpec::range(1, -1, 3)}),
                           torch::tensor({0, 3, 6, 9}, torch::kInt64)));
}

TEST(TensorIndexTest, EmptyRangesFollowStringSub) {
  EXPECT_EQ(index_tensor(torch::arange(5), {IndexSpec::range(3, 2)}).numel(), 0);
  EXPECT_EQ(index_tensor(torch::arange(5), {IndexSpec::range(6)}).numel(), 0);
  EXPECT_EQ(index_tensor(torch::arange(5), {IndexSpec::range(1, 0)}).numel(), 0);
}

TEST(TensorIndexTest, OutOfRangeAndZeroAreExplained) {
  try {
    index_tensor(matrix(), {IndexSpec::select(4)});
    FAIL();
  } catch (const UsageError& e) {
    EXPECT_STREQ(e.what(), "index 4 is out of range for size 3 (valid: 1..3 or -3..-1)");
  }
  try {
    index_tensor(matrix(), {IndexSpec::select(0)});
    FAIL();
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("lmkit counts from 1"), std::string::npos);
  }
  EXPECT_THROW(index_tensor(matrix(), {IndexSpec::all(), IndexSpec::all(), IndexSpec::select(1)}), UsageError);
}

TEST(TensorIndexTest, IndexTensorsAreOneBased) {
  const auto ids = torch::tensor({3, 1, -1}, torch::kInt64);
  EXPECT_TRUE(torch::equal(index_tensor(torch::arange(10, 15), {IndexSpec::of(ids)}),
                           torch::tensor({12, 10, 14}, torch::kInt64)));
  EXPECT_THROW(index_tensor(torch::arange(5), {IndexSpec::of(torch::tensor({0}, torch::kInt64))}), UsageError);
  EXPECT_THROW(index_tensor(torch::arange(5), {IndexSpec::of(torch::tensor({6}, torch::kInt64))}), UsageError);
}

TEST(TensorIndexTest, BooleanMasksMustMatch) {
  const auto m = matrix();
  EXPECT_TRUE(torch::equal(index_tensor(m, {IndexSpec::of(m > 9)}), torch::tensor({10, 11}, torch::kInt64)));
  EXPECT_THROW(index_tensor(m, {IndexSpec::of(torch::ones({2}, torch::kBool))}), UsageError);
}

TEST(TensorIndexTest, AssignmentWritesInPlace) {
  auto m = matrix();
  assign_index(m, {IndexSpec::all(), IndexSpec::select(-1)}, torch::scalar_tensor(-7, torch::kInt64));
  EXPECT_TRUE(torch::equal(m.select(1, 3), torch::full({3}, -7, torch::kInt64)));
  EXPECT_EQ(m[0][0].item<int64_t>(), 0);
}

TEST(TensorIndexTest, DimensionsResolve) {
  EXPECT_EQ(resolve_dim(1, 3), 0);
  EXPECT_EQ(resolve_dim(-1, 3), 2);
  EXPECT_THROW(resolve_dim(4, 3), UsageError);
  EXPECT_THROW(resolve_dim(1, 0), UsageError);
}

}  // namespace
}  // namespace lmkit
