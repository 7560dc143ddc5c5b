#include "runtime/tensor/nested_list.h"

#include <gtest/gtest.h>

#include "runtime/core/error.h"

namespace lmkit {
namespace {

TEST(NestedListTest, InfersShapeAndIntegerDtype) {
  NestedListBuilder b;
  b.open_list();
  for (int row = 0; row < 2; ++row) {
    b.open_list();
    for (int col = 0; col < 3; ++col) b.add_number(row * 3 + col, true);
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
  b.add_number(1, true);
  b.add_number(2.5, false);
  b.close_list();
  const auto t = b.build();
  EXPECT_EQ(t.scalar_type(), torch::kFloat32);
  EXPECT_FLOAT_EQ(t[1].item<float>(), 2.5f);
}

TEST(NestedListTest, ExplicitDtypeWins) {
  NestedListBuilder b;
  b.open_list();
  b.add_number(1, true);
  b.close_list();
  EXPECT_EQ(b.build(torch::kFloat64).scalar_type(), torch::kFloat64);
}

TEST(NestedListTest, ScalarIsZeroDimensional) {
  NestedListBuilder b;
  b.add_number(4, true);
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
  b.add_number(1, true);
  b.add_number(2, true);
  b.close_list();
  b.open_list();
  b.add_number(3, true);
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
  b.add_number(1, true);
  b.close_list();
  EXPECT_THROW(b.add_number(2, true), UsageError);
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
  mixed.add_number(1, true);
  mixed.close_list();
  EXPECT_THROW(mixed.build(), UsageError);
}

}  // namespace
}  // namespace lmkit
