// The Tensor methods of lmkit's scripts (lmkit.Tensor), as plain functions: dimensions, positions
// and returned indices are 1-based (negative ones count from the end; tensor_index.h converts
// them), trailing arguments may be left out (std::optional: nil), and each method checks its
// arguments with a message that says what is wrong. The Lua binding declares each one in a line.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "runtime/config/declared_result.h"
#include "runtime/core/torch.h"
#include "runtime/tensor/tensor_factories.h"
#include "runtime/tensor/tensor_options.h"

namespace lmkit {

// One dimension or several ({1, 2}).
using Dims = std::variant<std::int64_t, std::vector<std::int64_t>>;
// Values and their 1-based indices (topk, sort, max and min along a dimension).
struct Indexed {
  torch::Tensor values, indices;
};
inline auto declared_result(config::Tag<Indexed>) {
  return config::result_values(config::result_field("values", &Indexed::values, "the values"),
                               config::result_field("indices", &Indexed::indices, "their 1-based indices"));
}
// A value or, with a dimension, the values and their indices (max, min).
using ValuesOrIndexed = std::variant<torch::Tensor, Indexed>;

// What a script reads as t.grad (nil until a backward fills it; a non-leaf's only after
// t:retain_grad()), t.requires_grad, t.is_leaf and
// t.grad_fn (the name of the operation that made t; nil for a leaf).
struct AutogradFields {
  torch::Tensor grad;
  bool requires_grad = false, is_leaf = true;
  std::optional<std::string> grad_fn;
};
inline auto declared_result(config::Tag<AutogradFields>) {
  return config::result_table(config::result_field("grad", &AutogradFields::grad, "the gradient"),
                              config::result_field("requires_grad", &AutogradFields::requires_grad, "recorded for autograd"),
                              config::result_field("is_leaf", &AutogradFields::is_leaf, "made by no recorded operation"),
                              config::result_field("grad_fn", &AutogradFields::grad_fn, "the operation that made it"));
}
AutogradFields autograd_fields(const torch::Tensor& t);

// Reductions over every element, or over dims (keepdim: keep them with size 1).
torch::Tensor sum_over(const torch::Tensor& t, const std::optional<Dims>& dims, std::optional<bool> keepdim);
torch::Tensor mean_over(const torch::Tensor& t, const std::optional<Dims>& dims, std::optional<bool> keepdim);
torch::Tensor std_over(const torch::Tensor& t, const std::optional<Dims>& dims, std::optional<bool> keepdim);
torch::Tensor var_over(const torch::Tensor& t, const std::optional<Dims>& dims, std::optional<bool> keepdim);
torch::Tensor logsumexp_over(const torch::Tensor& t, const std::optional<Dims>& dims, std::optional<bool> keepdim);
torch::Tensor norm_over(const torch::Tensor& t, std::optional<double> p, const std::optional<Dims>& dims,
                        std::optional<bool> keepdim);

ValuesOrIndexed max_along(const torch::Tensor& t, std::optional<std::int64_t> dim, std::optional<bool> keepdim);
ValuesOrIndexed min_along(const torch::Tensor& t, std::optional<std::int64_t> dim, std::optional<bool> keepdim);
torch::Tensor argmax_along(const torch::Tensor& t, std::optional<std::int64_t> dim, std::optional<bool> keepdim);
torch::Tensor argmin_along(const torch::Tensor& t, std::optional<std::int64_t> dim, std::optional<bool> keepdim);
// The k largest (or smallest) along dim (default: the last), sorted, with 1-based indices.
Indexed top_k_along(const torch::Tensor& t, std::int64_t k, std::optional<std::int64_t> dim, std::optional<bool> largest);
Indexed sort_along(const torch::Tensor& t, std::optional<std::int64_t> dim, std::optional<bool> descending);

// Shapes: a dimension inserted at position dim (1..t:dim()+1), removed (size 1; all such without
// dim), swapped, merged (start..end, default all); views of a range or one index.
torch::Tensor unsqueeze_at(const torch::Tensor& t, std::int64_t dim);
torch::Tensor squeeze_at(const torch::Tensor& t, std::optional<std::int64_t> dim);
torch::Tensor transpose_of(const torch::Tensor& t, std::int64_t dim1, std::int64_t dim2);
torch::Tensor flatten_between(const torch::Tensor& t, std::optional<std::int64_t> start, std::optional<std::int64_t> end);
torch::Tensor narrow_along(const torch::Tensor& t, std::int64_t dim, std::int64_t start, std::int64_t length);
torch::Tensor select_along(const torch::Tensor& t, std::int64_t dim, std::int64_t index);
// Entries at 1-based `ids` (an integer tensor) along dim.
torch::Tensor index_select_along(const torch::Tensor& t, std::int64_t dim, const torch::Tensor& ids);

// Along dim (default: the last).
// The singular values of a matrix (or a batch of them), descending: a NaN or ±Inf anywhere is
// refused naming its position before LAPACK sees it (which would print its own "SLASCL parameter
// number 4 had an illegal value" and return NaNs).
torch::Tensor singular_values_of(const torch::Tensor& t);

torch::Tensor softmax_along(const torch::Tensor& t, std::optional<std::int64_t> dim);
torch::Tensor log_softmax_along(const torch::Tensor& t, std::optional<std::int64_t> dim);
torch::Tensor cumsum_along(const torch::Tensor& t, std::int64_t dim);
// Limits to [min, max]; nil leaves an end open (one of them is needed).
torch::Tensor clamp_between(const torch::Tensor& t, std::optional<double> min, std::optional<double> max);

// Same sizes and values: exactly, or |t − other| ≤ atol + rtol·|other| (defaults 1e-5, 1e-8).
bool equal_to(const torch::Tensor& t, const torch::Tensor& other);
// a == b in a script: the same sizes and equal values, whatever their dtypes and devices.
bool same_sizes_and_values(const torch::Tensor& a, const torch::Tensor& b);
// The value of a one-element tensor, for '<' and '<=' (which compare numbers, not elementwise).
double one_element_number(const torch::Tensor& t);
bool all_close(const torch::Tensor& t, const torch::Tensor& other, std::optional<double> rtol, std::optional<double> atol);

// All sizes, or the size of one dimension.
std::variant<std::vector<std::int64_t>, std::int64_t> sizes_of(const torch::Tensor& t, std::optional<std::int64_t> dim);
// The value of a one-element tensor, as its dtype's kind: a boolean, an integer or a float.
std::variant<bool, std::int64_t, double> item_of(const torch::Tensor& t);
// To a dtype or device named by one string ("float64", "cuda:1"), or to both ({dtype=, device=}).
torch::Tensor converted(const torch::Tensor& t, const std::variant<std::string, ConvertSpec>& target);

// The same elements seen with other sizes (one may be -1); reshape copies when it must; expand
// broadcasts (-1 keeps a size); permute reorders the (1-based) dimensions.
torch::Tensor viewed(const torch::Tensor& t, const Sizes& sizes);
torch::Tensor reshaped(const torch::Tensor& t, const Sizes& sizes);
torch::Tensor expanded(const torch::Tensor& t, const Sizes& sizes);
torch::Tensor permuted(const torch::Tensor& t, const Rest<std::int64_t>& dims);

// t + alpha·other and t − alpha·other (alpha default 1).
torch::Tensor added(const torch::Tensor& t, const Operand& other, const std::optional<torch::Scalar>& alpha);
torch::Tensor subtracted(const torch::Tensor& t, const Operand& other, const std::optional<torch::Scalar>& alpha);

// In place, each returning t itself: t += alpha·other, t −= alpha·other, t *= other, t /= other,
// other's values copied in (broadcasting, converting), every element set to a value or to 0, U(a, b)
// draws (default U(0, 1)), N(mean, std²) draws (default N(0, 1)); recording for autograd started
// (or stopped: flag false), .grad kept for a non-leaf.
torch::Tensor& add_in_place(torch::Tensor& t, const Operand& other, const std::optional<torch::Scalar>& alpha);
torch::Tensor& sub_in_place(torch::Tensor& t, const Operand& other, const std::optional<torch::Scalar>& alpha);
torch::Tensor& mul_in_place(torch::Tensor& t, const Operand& other);
torch::Tensor& div_in_place(torch::Tensor& t, const Operand& other);
torch::Tensor& copy_in_place(torch::Tensor& t, const Operand& source);
torch::Tensor& fill_in_place(torch::Tensor& t, const Operand& value);
torch::Tensor& zero_in_place(torch::Tensor& t);
torch::Tensor& uniform_in_place(torch::Tensor& t, std::optional<double> a, std::optional<double> b);
torch::Tensor& normal_in_place(torch::Tensor& t, std::optional<double> mean, std::optional<double> std);
torch::Tensor& record_grad(torch::Tensor& t, std::optional<bool> flag);
torch::Tensor& retain_grad_of(torch::Tensor& t);

// Back-propagates from a one-element loss, or with the gradient given.
void backward_from(const torch::Tensor& t, const std::optional<torch::Tensor>& gradient);

}  // namespace lmkit
