#include "runtime/tensor/tensor_factories.h"

#include <limits>

#include "runtime/core/error.h"
#include "runtime/core/number_text.h"
#include "runtime/tensor/tensor_index.h"

namespace lmkit {
namespace {

template <typename Make>
torch::Tensor sized(const Sizes& sizes, const TensorSpec& spec, Make make) {
  return make(checked_sizes(sizes), tensor_options(spec));
}

template <bool Stack>
torch::Tensor joined(const std::vector<torch::Tensor>& tensors, std::optional<std::int64_t> dim) {
  if (tensors.empty()) throw UsageError("needs at least one tensor");
  const auto d = resolve_dim(dim.value_or(1), tensors.front().dim() + (Stack ? 1 : 0));
  return Stack ? torch::stack(tensors, d) : torch::cat(tensors, d);
}

}  // namespace

torch::Tensor operand_tensor(const Operand& operand) {
  if (const auto* tensor = std::get_if<torch::Tensor>(&operand)) return *tensor;
  const auto& value = std::get<torch::Scalar>(operand);
  // host: a wrapped number takes the device of the tensor it meets, as Torch's own do
  auto t = torch::scalar_tensor(value, torch::TensorOptions().dtype(value.type()));
  t.unsafeGetTensorImpl()->set_wrapped_number(true);
  return t;
}

std::vector<std::int64_t> checked_sizes(const Sizes& sizes) {
  for (std::size_t k = 0; k < sizes.values.size(); ++k) {
    if (sizes.values[k] < 0) {
      throw UsageError("sizes must be non-negative integers (entry " + integer_text(k + 1) + " is " +
                       integer_text(sizes.values[k]) + ")");
    }
  }
  return sizes.values;
}

torch::Tensor zeros_of(const Sizes& sizes, const TensorSpec& spec) {
  // host: unless the script's spec names a device, as lmkit.zeros documents
  return sized(sizes, spec, [](auto s, auto o) { return torch::zeros(s, o); });
}

torch::Tensor ones_of(const Sizes& sizes, const TensorSpec& spec) {
  // host: unless the script's spec names a device, as lmkit.ones documents
  return sized(sizes, spec, [](auto s, auto o) { return torch::ones(s, o); });
}

torch::Tensor uniform_draws(const Sizes& sizes, const TensorSpec& spec) {
  // host: unless the script's spec names a device, as lmkit.rand documents
  return sized(sizes, spec, [](auto s, auto o) { return torch::rand(s, o); });
}

torch::Tensor normal_draws(const Sizes& sizes, const TensorSpec& spec) {
  // host: unless the script's spec names a device, as lmkit.randn documents
  return sized(sizes, spec, [](auto s, auto o) { return torch::randn(s, o); });
}

torch::Tensor filled(const Sizes& sizes, const torch::Scalar& value, const TensorSpec& spec) {
  const auto dtype = value.isBoolean() ? torch::kBool : value.isIntegral(false) ? torch::kInt64 : torch::kFloat32;
  // host: unless the script's spec names a device, as lmkit.full documents
  return torch::full(checked_sizes(sizes), value, tensor_options(spec, torch::TensorOptions().dtype(dtype)));
}

torch::Tensor identity_matrix(const Sizes& sizes, const TensorSpec& spec) {
  const auto n_m = checked_sizes(sizes);
  if (n_m.empty() || n_m.size() > 2) {
    throw UsageError("eye(n[, m]) takes one or two sizes, got " + integer_text(n_m.size()));
  }
  // host: unless the script's spec names a device, as lmkit.eye documents
  return torch::eye(n_m.front(), n_m.back(), tensor_options(spec));
}

torch::Tensor arange_of(const Rest<torch::Scalar>& bounds, const TensorSpec& spec) {
  const auto& b = bounds.values;
  if (b.empty() || b.size() > 3) throw UsageError("arange(stop) or arange(start, stop[, step])");
  bool all_integers = true;
  for (const auto& value : b) {
    if (value.isBoolean()) throw UsageError("arange's bounds are numbers, got a boolean");
    all_integers = all_integers && value.isIntegral(false);
  }
  const auto defaults = torch::TensorOptions().dtype(all_integers ? torch::kInt64 : torch::kFloat32);
  const auto options = tensor_options(spec, defaults);
  if (all_integers && options.dtype() == torch::kInt64) {
    // Integer bounds, int64 values: counted in 128 bits and handed to Torch as integers, so that
    // bounds near ±2^63 are exact (as doubles, maxinteger − 2 and maxinteger are one number).
    const std::int64_t start = b.size() == 1 ? 0 : b[0].toLong();
    const std::int64_t stop = b.size() == 1 ? b[0].toLong() : b[1].toLong();
    const std::int64_t step = b.size() == 3 ? b[2].toLong() : 1;
    if (step == 0) throw UsageError("step must not be 0");
    const __int128 span = static_cast<__int128>(stop) - start;
    const __int128 count = span == 0 || (span > 0) != (step > 0) ? 0 : (span + step - (step > 0 ? 1 : -1)) / step;
    // host: unless the script's spec names a device, as lmkit.arange documents
    if (count == 0) return torch::empty({0}, options);
    // Torch computes the count as end − start + step − sign in int64: past that, it would overflow.
    const __int128 torch_sum = span + step - (step > 0 ? 1 : -1);
    if (torch_sum > std::numeric_limits<std::int64_t>::max() || torch_sum < std::numeric_limits<std::int64_t>::min()) {
      throw UsageError("arange(" + integer_text(start) + ", " + integer_text(stop) + ", " + integer_text(step) +
                       ") spans more than int64 can count: narrow the range");
    }
    // host: unless the script's spec names a device, as lmkit.arange documents
    return torch::arange(torch::Scalar(start), torch::Scalar(stop), torch::Scalar(step), options);
  }
  const double start = b.size() == 1 ? 0.0 : b[0].toDouble();
  const double stop = b.size() == 1 ? b[0].toDouble() : b[1].toDouble();
  const double step = b.size() == 3 ? b[2].toDouble() : 1.0;
  if (step == 0) throw UsageError("step must not be 0");
  // host: unless the script's spec names a device, as lmkit.arange documents
  return torch::arange(start, stop, step, options);
}

torch::Tensor concatenated(const std::vector<torch::Tensor>& tensors, std::optional<std::int64_t> dim) {
  return joined<false>(tensors, dim);
}

torch::Tensor stacked(const std::vector<torch::Tensor>& tensors, std::optional<std::int64_t> dim) {
  return joined<true>(tensors, dim);
}

torch::Tensor selected_where(const torch::Tensor& condition, const Operand& a, const Operand& b) {
  const auto x = operand_tensor(a);
  const auto y = operand_tensor(b);
  // Torch 1.13's where takes two tensors of one dtype: given two numbers (wrapped 0-d tensors) it
  // fails an internal assertion. Both go to the type promotion of the pair, as torch.where does.
  const auto type = at::result_type(x, y);
  return torch::where(condition, x.to(type), y.to(type));
}

}  // namespace lmkit
