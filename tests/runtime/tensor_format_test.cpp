#include "runtime/tensor/tensor_format.h"

#include <gtest/gtest.h>

#include <limits>

#include "runtime/core/error.h"

namespace lmkit {
namespace {

TEST(TensorFormatTest, MatrixInBraceSyntaxWithSharedFormat) {
  const auto t = torch::tensor({1.0, 2.5, 3.0, 4.0}, torch::kFloat32).reshape({2, 2});
  EXPECT_EQ(format_tensor(t),
            "tensor({{1.0000, 2.5000},\n"
            "        {3.0000, 4.0000}}, float32, size 2x2)");
}

TEST(TensorFormatTest, IntegersBooleansAndScalars) {
  EXPECT_EQ(format_tensor(torch::arange(3)), "tensor({0, 1, 2}, int64, size 3)");
  EXPECT_EQ(format_tensor(torch::tensor({true, false})), "tensor({ true, false}, bool, size 2)");
  EXPECT_EQ(format_tensor(torch::scalar_tensor(3.0)), "tensor(3., float32)");
  EXPECT_EQ(format_tensor(torch::zeros({2, 0})), "tensor({}, float32, size 2x0)");
  EXPECT_EQ(format_tensor(torch::Tensor()), "tensor(undefined)");
}

TEST(TensorFormatTest, WideRangeSwitchesToScientific) {
  const auto t = torch::tensor({1e-6, 1.0}, torch::kFloat64);
  EXPECT_EQ(format_tensor(t), "tensor({1.0000e-06, 1.0000e+00}, float64, size 2)");
}

TEST(TensorFormatTest, NonFiniteValuesAreNamed) {
  const double inf = std::numeric_limits<double>::infinity();
  const auto t = torch::tensor({1.5, std::nan(""), inf, -inf}, torch::kFloat32);
  EXPECT_EQ(format_tensor(t), "tensor({1.5000,    nan,    inf,   -inf}, float32, size 4)");
}

TEST(TensorFormatTest, LargeTensorsAreSummarized) {
  const auto text = format_tensor(torch::arange(2000));
  EXPECT_EQ(text, "tensor({   0,    1,    2, ..., 1997, 1998, 1999}, int64, size 2000)");
}

TEST(TensorFormatTest, AutogradStateIsShown) {
  auto leaf = torch::ones({2}, torch::requires_grad());
  EXPECT_NE(format_tensor(leaf).find("requires_grad=true"), std::string::npos);
  EXPECT_NE(format_tensor(leaf * leaf).find("grad_fn=MulBackward0"), std::string::npos);
}

TEST(TensorFormatTest, LongRowsWrapAtTheLineWidth) {
  const auto text = format_tensor(torch::arange(40) * 1000);
  for (std::size_t start = 0, end; start < text.size(); start = end + 1) {
    end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    // the closing suffix may run past the width; element lines may not
    if (text.find("int64", start) > end) {
      EXPECT_LE(end - start, 80u);
    }
  }
  EXPECT_NE(text.find('\n'), std::string::npos);
}

TEST(TensorFormatTest, DtypeNamesRoundTripAndUnknownIsListed) {
  for (auto type : {torch::kFloat32, torch::kFloat64, torch::kInt64, torch::kBool, torch::kBFloat16}) {
    EXPECT_EQ(parse_dtype(dtype_name(type)), type);
  }
  EXPECT_EQ(parse_dtype("double"), torch::kFloat64);
  try {
    parse_dtype("float33");
    FAIL();
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("unknown dtype 'float33' (accepted: float32, float64"), std::string::npos);
  }
}

}  // namespace
}  // namespace lmkit
