// The Tensor methods of lmkit's scripts (lmkit.Tensor), as plain functions: dimensions, positions
// and returned indices are 1-based (negative ones count from the end; tensor_index.h converts
// them), trailing arguments may be left out (std::optional: nil), and each method checks its
// arguments with a message that says what is wrong. The Lua binding declares each one in a line.
#pragma once
#include <cstdint>
#include <optional>
#include <utility>
#include <variant>
#include <vector>

#include "runtime/config/declared_result.h"
#include "runtime/core/torch.h"

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
torch::Tensor softmax_along(const torch::Tensor& t, std::optional<std::int64_t> dim);
torch::Tensor log_softmax_along(const torch::Tensor& t, std::optional<std::int64_t> dim);
torch::Tensor cumsum_along(const torch::Tensor& t, std::int64_t dim);
// Limits to [min, max]; nil leaves an end open (one of them is needed).
torch::Tensor clamp_between(const torch::Tensor& t, std::optional<double> min, std::optional<double> max);

// Same sizes and values: exactly, or |t − other| ≤ atol + rtol·|other| (defaults 1e-5, 1e-8).
bool equal_to(const torch::Tensor& t, const torch::Tensor& other);
bool all_close(const torch::Tensor& t, const torch::Tensor& other, std::optional<double> rtol, std::optional<double> atol);

// Back-propagates from a one-element loss, or with the gradient given.
void backward_from(const torch::Tensor& t, const std::optional<torch::Tensor>& gradient);

}  // namespace lmkit
