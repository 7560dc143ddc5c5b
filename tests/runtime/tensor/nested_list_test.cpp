#include "runtime/tensor/nested_list.h"

#include <gtest/gtest.h>
#include <vector>
#include <string>
#include <optional>
#include <limits>
#include <cmath>

#include "runtime/core/error.h"

namespace lmkit {
namespace {

TEST(NestedListTest, InfersShapeAndIntegerDtype) {
  NestedListBuilder b;
  b.open_list();
  for (int row = 0; row < 2; ++row) {
    b.open_list();
    for (int col = 0; col < 3; ++col) b.add_integer(row * 3 + col);
    b.close_list();
  }
  b.close_list();
  const auto t = b.build();
  EXPECT_EQ(t.sizes(), (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(t.scalar_type(), torch::kInt64);
  EXPECT_EQ(t[1][2].item<int64_t>(), 5);
}

TEST(NestedListTest, OneFloatMakesFloat32) {
  NestedListBuilder b;
  b.open_list();
  b.add_integer(1);
  b.add_number(2.5);
  b.close_list();
  const auto t = b.build();
  EXPECT_EQ(t.scalar_type(), torch::kFloat32);
  EXPECT_FLOAT_EQ(t[1].item<float>(), 2.5f);
}

TEST(NestedListTest, ExplicitDtypeWins) {
  NestedListBuilder b;
  b.open_list();
  b.add_integer(1);
  b.close_list();
  EXPECT_EQ(b.build(torch::kFloat64).scalar_type(), torch::kFloat64);
}

TEST(NestedListTest, ScalarIsZeroDimensional) {
  NestedListBuilder b;
  b.add_integer(4);
  const auto t = b.build();
  EXPECT_EQ(t.dim(), 0);
  EXPECT_EQ(t.item<int64_t>(), 4);
}

TEST(NestedListTest, EmptyListsKeepTheirShape) {
  NestedListBuilder b;
  b.open_list();
  b.open_list();
  b.close_list();
  b.open_list();
  b.close_list();
  b.close_list();
  EXPECT_EQ(b.build().sizes(), (std::vector<int64_t>{2, 0}));
}

TEST(NestedListTest, RaggedRowsAreRejected) {
  NestedListBuilder b;
  b.open_list();
  b.open_list();
  b.add_integer(1);
  b.add_integer(2);
  b.close_list();
  b.open_list();
  b.add_integer(3);
  try {
    b.close_list();
    FAIL() << "expected a ragged-list error";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("has 1 elements where an earlier one had 2"), std::string::npos)
        << e.what();
  }
}

TEST(NestedListTest, NumberWhereListsWereIsRejected) {
  NestedListBuilder b;
  b.open_list();
  b.open_list();
  b.add_integer(1);
  b.close_list();
  EXPECT_THROW(b.add_integer(2), UsageError);
}

TEST(NestedListTest, BooleansMakeBoolAndDoNotMixWithNumbers) {
  NestedListBuilder b;
  b.open_list();
  b.add_boolean(true);
  b.add_boolean(false);
  b.close_list();
  EXPECT_EQ(b.build().scalar_type(), torch::kBool);
  NestedListBuilder mixed;
  mixed.open_list();
  mixed.add_boolean(true);
  mixed.add_integer(1);
  mixed.close_list();
  EXPECT_THROW(mixed.build(), UsageError);
}

// Integers reach int64 exactly (a double would turn 2^63 − 1 into −2^63 and 2^53 + 1 into 2^53);
// a value that does not fit the dtype asked for is refused naming it (no wrapping, no clamping).
TEST(NestedListTest, IntegersAreExactAndValuesOutsideTheDtypeAreRefused) {
  const auto build = [](std::vector<std::int64_t> integers, std::optional<torch::ScalarType> dtype) {
    NestedListBuilder b;
    b.open_list();
    for (const auto v : integers) b.add_integer(v);
    b.close_list();
    return b.build(dtype);
  };
  const std::int64_t big = std::numeric_limits<std::int64_t>::max(), small = std::numeric_limits<std::int64_t>::min();
  const auto exact = build({big, small, (std::int64_t{1} << 53) + 1}, std::nullopt);
  EXPECT_EQ(exact.scalar_type(), torch::kInt64);
  EXPECT_EQ(exact[0].item<std::int64_t>(), big);
  EXPECT_EQ(exact[1].item<std::int64_t>(), small);
  EXPECT_EQ(exact[2].item<std::int64_t>(), (std::int64_t{1} << 53) + 1);
  EXPECT_EQ(build({255, 0}, torch::kUInt8)[0].item<std::int64_t>(), 255);
  const auto refused = [&](std::vector<std::int64_t> integers, torch::ScalarType dtype) {
    try {
      build(std::move(integers), dtype);
    } catch (const UsageError& e) {
      return std::string(e.what());
    }
    return std::string("(no error)");
  };
  EXPECT_NE(refused({1, 300}, torch::kUInt8).find("the value 300 (element 2 in reading order) does not fit dtype uint8 (0 to 255)"),
            std::string::npos) << refused({1, 300}, torch::kUInt8);
  EXPECT_NE(refused({-1}, torch::kUInt8).find("the value -1"), std::string::npos);
  EXPECT_NE(refused({40000}, torch::kInt16).find("-32768 to 32767"), std::string::npos);
  EXPECT_NE(refused({std::int64_t{1} << 40}, torch::kInt32).find("does not fit"), std::string::npos);
  // Floats into integer dtypes: truncated toward 0 as torch.tensor does, but finite and in range.
  const auto floats = [](std::vector<double> values, torch::ScalarType dtype) {
    NestedListBuilder b;
    b.open_list();
    for (const auto v : values) b.add_number(v);
    b.close_list();
    return b.build(dtype);
  };
  EXPECT_TRUE(torch::equal(floats({1.9, -0.5, 255.5}, torch::kUInt8), torch::tensor({1, 0, 255}, torch::kUInt8)));
  EXPECT_EQ(floats({-9223372036854775808.0}, torch::kInt64).item<std::int64_t>(), small);
  for (const double bad : {1e300, std::nan(""), std::numeric_limits<double>::infinity(), 9223372036854775808.0}) {
    EXPECT_THROW(floats({bad}, torch::kInt64), UsageError) << bad;
  }
  EXPECT_THROW(floats({1e300}, torch::kInt32), UsageError);
  EXPECT_THROW(floats({256.0}, torch::kUInt8), UsageError);
  // Float dtypes take any number, as before (1e300 in float32 is inf, as in PyTorch).
  EXPECT_TRUE(std::isinf(floats({1e300}, torch::kFloat32).item<float>()));
}

}  // namespace
}  // namespace lmkit
