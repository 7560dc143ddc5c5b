// The tensors a script makes (lmkit.zeros, lmkit.eye, lmkit.arange, lmkit.cat, ...) and the operands
// it mixes with them, as plain functions: sizes come one by one or as one list (Rest), dimensions
// count from 1, and the default dtype follows the values given, as torch's Python API does.
#pragma once
#include <cstdint>
#include <optional>
#include <variant>
#include <vector>

#include "runtime/core/torch.h"
#include "runtime/tensor/tensor_options.h"

namespace lmkit {

// The arguments a script may give one by one or as one list: lmkit.zeros(2, 3) or lmkit.zeros({2, 3}).
template <typename T>
struct Rest {
  std::vector<T> values;
};
using Sizes = Rest<std::int64_t>;

// A tensor or a number (integer, float or boolean) on the other side of an operation.
using Operand = std::variant<torch::Tensor, torch::Scalar>;
// A number becomes a "wrapped number", so that, as in PyTorch, `t * 2` keeps t's dtype.
torch::Tensor operand_tensor(const Operand& operand);

// Every size a non-negative integer; the error names the entry (1-based).
std::vector<std::int64_t> checked_sizes(const Sizes& sizes);

torch::Tensor zeros_of(const Sizes& sizes, const TensorSpec& spec);
torch::Tensor ones_of(const Sizes& sizes, const TensorSpec& spec);
// U(0, 1) and N(0, 1) draws from Torch's generator.
torch::Tensor uniform_draws(const Sizes& sizes, const TensorSpec& spec);
torch::Tensor normal_draws(const Sizes& sizes, const TensorSpec& spec);
// Every element `value`; the default dtype follows the value's kind (bool, int64, float32), as torch.full's.
torch::Tensor filled(const Sizes& sizes, const torch::Scalar& value, const TensorSpec& spec);
// The n × m identity (sizes {n} or {n, m}).
torch::Tensor identity_matrix(const Sizes& sizes, const TensorSpec& spec);
// arange(stop) or arange(start, stop[, step]): half-open, int64 when every bound is an integer,
// else float32 (the spec's dtype wins).
torch::Tensor arange_of(const Rest<torch::Scalar>& bounds, const TensorSpec& spec);

// Joined along an existing dimension (cat) or a new one (stack); dim counts from 1 (default 1).
torch::Tensor concatenated(const std::vector<torch::Tensor>& tensors, std::optional<std::int64_t> dim);
torch::Tensor stacked(const std::vector<torch::Tensor>& tensors, std::optional<std::int64_t> dim);
// a where condition holds, else b, in the dtype the pair promotes to.
torch::Tensor selected_where(const torch::Tensor& condition, const Operand& a, const Operand& b);

}  // namespace lmkit
