#include "runtime/tensor/tensor_methods.h"

#include "runtime/core/error.h"
#include "runtime/core/number_text.h"
#include "runtime/tensor/tensor_format.h"
#include "runtime/tensor/tensor_index.h"

namespace lmkit {
namespace {

std::vector<std::int64_t> resolved(const torch::Tensor& t, const Dims& dims) {
  std::vector<std::int64_t> zero_based;
  if (const auto* one = std::get_if<std::int64_t>(&dims)) return {resolve_dim(*one, t.dim())};
  for (const auto d : std::get<std::vector<std::int64_t>>(dims)) zero_based.push_back(resolve_dim(d, t.dim()));
  return zero_based;
}

// The dimension a method works along: the given one, else the last.
std::int64_t along(const torch::Tensor& t, std::optional<std::int64_t> dim) {
  return dim ? resolve_dim(*dim, t.dim()) : t.dim() - 1;
}

template <typename All, typename Over>
torch::Tensor reduce(const torch::Tensor& t, const std::optional<Dims>& dims, std::optional<bool> keepdim, All all, Over over) {
  if (!dims) return all(t);
  return over(t, resolved(t, *dims), keepdim.value_or(false));
}

// Lua's results count from 1 where Torch's count from 0 (argmax, sort, topk).
Indexed one_based(std::tuple<torch::Tensor, torch::Tensor> result) {
  return {std::get<0>(result), to_lua_indices(std::get<1>(result))};
}

}  // namespace

torch::Tensor sum_over(const torch::Tensor& t, const std::optional<Dims>& dims, std::optional<bool> keepdim) {
  return reduce(t, dims, keepdim, [](const torch::Tensor& x) { return x.sum(); },
                [](const torch::Tensor& x, torch::IntArrayRef d, bool k) { return x.sum(d, k); });
}

torch::Tensor mean_over(const torch::Tensor& t, const std::optional<Dims>& dims, std::optional<bool> keepdim) {
  return reduce(t, dims, keepdim, [](const torch::Tensor& x) { return x.mean(); },
                [](const torch::Tensor& x, torch::IntArrayRef d, bool k) { return x.mean(d, k); });
}

torch::Tensor std_over(const torch::Tensor& t, const std::optional<Dims>& dims, std::optional<bool> keepdim) {
  return reduce(t, dims, keepdim, [](const torch::Tensor& x) { return x.std(); },
                [](const torch::Tensor& x, torch::IntArrayRef d, bool k) { return x.std(d, /*unbiased=*/true, k); });
}

torch::Tensor var_over(const torch::Tensor& t, const std::optional<Dims>& dims, std::optional<bool> keepdim) {
  return reduce(t, dims, keepdim, [](const torch::Tensor& x) { return x.var(); },
                [](const torch::Tensor& x, torch::IntArrayRef d, bool k) { return x.var(d, /*unbiased=*/true, k); });
}

torch::Tensor logsumexp_over(const torch::Tensor& t, const std::optional<Dims>& dims, std::optional<bool> keepdim) {
  return reduce(t, dims, keepdim, [](const torch::Tensor& x) { return x.flatten().logsumexp(0); },
                [](const torch::Tensor& x, torch::IntArrayRef d, bool k) { return x.logsumexp(d, k); });
}

torch::Tensor norm_over(const torch::Tensor& t, std::optional<double> p, const std::optional<Dims>& dims,
                        std::optional<bool> keepdim) {
  const double order = p.value_or(2.0);
  if (!dims) return t.norm(order);
  return t.norm(order, resolved(t, *dims), keepdim.value_or(false));
}

ValuesOrIndexed max_along(const torch::Tensor& t, std::optional<std::int64_t> dim, std::optional<bool> keepdim) {
  if (!dim) return t.max();
  return one_based(t.max(resolve_dim(*dim, t.dim()), keepdim.value_or(false)));
}

ValuesOrIndexed min_along(const torch::Tensor& t, std::optional<std::int64_t> dim, std::optional<bool> keepdim) {
  if (!dim) return t.min();
  return one_based(t.min(resolve_dim(*dim, t.dim()), keepdim.value_or(false)));
}

torch::Tensor argmax_along(const torch::Tensor& t, std::optional<std::int64_t> dim, std::optional<bool> keepdim) {
  c10::optional<std::int64_t> d;  // c10::optional is std::optional only from Torch 2.x on
  if (dim) d = resolve_dim(*dim, t.dim());
  return to_lua_indices(t.argmax(d, keepdim.value_or(false)));
}

torch::Tensor argmin_along(const torch::Tensor& t, std::optional<std::int64_t> dim, std::optional<bool> keepdim) {
  c10::optional<std::int64_t> d;
  if (dim) d = resolve_dim(*dim, t.dim());
  return to_lua_indices(t.argmin(d, keepdim.value_or(false)));
}

Indexed top_k_along(const torch::Tensor& t, std::int64_t k, std::optional<std::int64_t> dim, std::optional<bool> largest) {
  const auto d = along(t, dim);
  if (k < 0 || k > t.size(d)) throw UsageError("k = " + integer_text(k) + " is not in 0.." + integer_text(t.size(d)));
  return one_based(t.topk(k, d, largest.value_or(true), /*sorted=*/true));
}

Indexed sort_along(const torch::Tensor& t, std::optional<std::int64_t> dim, std::optional<bool> descending) {
  return one_based(t.sort(along(t, dim), descending.value_or(false)));
}

torch::Tensor unsqueeze_at(const torch::Tensor& t, std::int64_t dim) {
  // Inserting: positions run 1..dim+1 (and -1 appends).
  return t.unsqueeze(resolve_position(dim, t.dim() + 1, "dimension"));
}

torch::Tensor squeeze_at(const torch::Tensor& t, std::optional<std::int64_t> dim) {
  return dim ? t.squeeze(resolve_dim(*dim, t.dim())) : t.squeeze();
}

torch::Tensor transpose_of(const torch::Tensor& t, std::int64_t dim1, std::int64_t dim2) {
  return t.transpose(resolve_dim(dim1, t.dim()), resolve_dim(dim2, t.dim()));
}

torch::Tensor flatten_between(const torch::Tensor& t, std::optional<std::int64_t> start, std::optional<std::int64_t> end) {
  if (t.dim() == 0) return t.reshape({1});
  return t.flatten(start ? resolve_dim(*start, t.dim()) : 0, end ? resolve_dim(*end, t.dim()) : t.dim() - 1);
}

torch::Tensor narrow_along(const torch::Tensor& t, std::int64_t dim, std::int64_t start, std::int64_t length) {
  const auto d = resolve_dim(dim, t.dim());
  const auto size = t.size(d);
  const auto from = start == size + 1 ? size : resolve_position(start, size, "start");
  // length > size - from, not from + length > size: a length near 2^63 overflows the sum.
  if (length < 0 || length > size - from) {
    throw UsageError("narrow: " + integer_text(length) + " elements from " + integer_text(start) +
                     " run past the end of dimension " + integer_text(d + 1) + " (size " + integer_text(size) + ")");
  }
  return t.narrow(d, from, length);
}

torch::Tensor select_along(const torch::Tensor& t, std::int64_t dim, std::int64_t index) {
  const auto d = resolve_dim(dim, t.dim());
  return t.select(d, resolve_position(index, t.size(d), "index"));
}

torch::Tensor index_select_along(const torch::Tensor& t, std::int64_t dim, const torch::Tensor& ids) {
  std::vector<IndexSpec> specs(static_cast<std::size_t>(resolve_dim(dim, t.dim())), IndexSpec::all());
  specs.push_back(IndexSpec::of(ids));
  return index_tensor(t, specs);
}

torch::Tensor softmax_along(const torch::Tensor& t, std::optional<std::int64_t> dim) { return torch::softmax(t, along(t, dim)); }

torch::Tensor log_softmax_along(const torch::Tensor& t, std::optional<std::int64_t> dim) {
  return torch::log_softmax(t, along(t, dim));
}

torch::Tensor cumsum_along(const torch::Tensor& t, std::int64_t dim) { return t.cumsum(resolve_dim(dim, t.dim())); }

torch::Tensor clamp_between(const torch::Tensor& t, std::optional<double> min, std::optional<double> max) {
  if (!min && !max) throw UsageError("clamp needs a lower or an upper bound");
  return t.clamp(min ? c10::optional<torch::Scalar>(*min) : c10::nullopt,
                 max ? c10::optional<torch::Scalar>(*max) : c10::nullopt);
}

bool equal_to(const torch::Tensor& t, const torch::Tensor& other) {
  return t.sizes() == other.sizes() && torch::equal(t, other.to(t.scalar_type()));
}

bool all_close(const torch::Tensor& t, const torch::Tensor& other, std::optional<double> rtol, std::optional<double> atol) {
  return t.sizes() == other.sizes() && torch::allclose(t, other.to(t.scalar_type()), rtol.value_or(1e-5), atol.value_or(1e-8));
}

void backward_from(const torch::Tensor& t, const std::optional<torch::Tensor>& gradient) {
  if (gradient) return t.backward(*gradient);
  if (t.numel() != 1) {
    throw UsageError("backward() without a gradient needs a one-element tensor (a loss); this one has size " +
                     format_shape(t.sizes()) + ": pass the gradient, t:backward(g)");
  }
  t.backward();
}

}  // namespace lmkit
