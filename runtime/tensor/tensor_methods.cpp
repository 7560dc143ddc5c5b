#include "runtime/tensor/tensor_methods.h"

#include "runtime/core/device.h"
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

AutogradFields autograd_fields(const torch::Tensor& t) {
  AutogradFields fields{torch::Tensor(), t.requires_grad(), t.is_leaf(), std::nullopt};
  // A non-leaf keeps no gradient unless retain_grad() asked (reading it anyway makes Torch warn).
  if (t.is_leaf() || t.retains_grad()) fields.grad = t.grad();
  if (t.grad_fn()) fields.grad_fn = t.grad_fn()->name();
  return fields;
}

bool same_sizes_and_values(const torch::Tensor& a, const torch::Tensor& b) {
  return a.sizes() == b.sizes() &&
         torch::equal(a.to(torch::kFloat64).to(torch::kCPU), b.to(torch::kFloat64).to(torch::kCPU));
}

double one_element_number(const torch::Tensor& t) {
  if (t.numel() != 1) {
    throw UsageError("'<' and '<=' compare one-element tensors; use :lt()/:le() elementwise (this one has size " +
                     format_shape(t.sizes()) + ")");
  }
  return t.item<double>();
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

std::variant<std::vector<std::int64_t>, std::int64_t> sizes_of(const torch::Tensor& t, std::optional<std::int64_t> dim) {
  if (dim) return t.size(resolve_dim(*dim, t.dim()));
  return t.sizes().vec();
}

std::variant<bool, std::int64_t, double> item_of(const torch::Tensor& t) {
  if (t.numel() != 1) throw UsageError("item() needs a one-element tensor, this one has size " + format_shape(t.sizes()));
  if (t.scalar_type() == torch::kBool) return t.item<bool>();
  if (torch::isIntegralType(t.scalar_type(), false)) return t.item<std::int64_t>();
  return t.item<double>();
}

torch::Tensor converted(const torch::Tensor& t, const std::variant<std::string, ConvertSpec>& target) {
  if (const auto* spec = std::get_if<ConvertSpec>(&target)) return convert(t, *spec);
  const auto& name = std::get<std::string>(target);
  if (name == "cpu" || name.rfind("cuda", 0) == 0) return t.to(parse_device(name));
  try {
    return t.to(parse_dtype(name));
  } catch (const UsageError& e) {
    throw UsageError(std::string(e.what()) + "; or a device: \"cpu\", \"cuda\", \"cuda:N\"");
  }
}

torch::Tensor viewed(const torch::Tensor& t, const Sizes& sizes) { return t.view(sizes.values); }
torch::Tensor reshaped(const torch::Tensor& t, const Sizes& sizes) { return t.reshape(sizes.values); }
torch::Tensor expanded(const torch::Tensor& t, const Sizes& sizes) { return t.expand(sizes.values); }

torch::Tensor permuted(const torch::Tensor& t, const Rest<std::int64_t>& dims) {
  std::vector<std::int64_t> zero_based;
  for (const auto d : dims.values) zero_based.push_back(resolve_dim(d, t.dim()));
  return t.permute(zero_based);
}

torch::Tensor added(const torch::Tensor& t, const Operand& other, const std::optional<torch::Scalar>& alpha) {
  return torch::add(t, operand_tensor(other), alpha.value_or(torch::Scalar(std::int64_t{1})));
}

torch::Tensor subtracted(const torch::Tensor& t, const Operand& other, const std::optional<torch::Scalar>& alpha) {
  return torch::sub(t, operand_tensor(other), alpha.value_or(torch::Scalar(std::int64_t{1})));
}

torch::Tensor& add_in_place(torch::Tensor& t, const Operand& other, const std::optional<torch::Scalar>& alpha) {
  t.add_(operand_tensor(other), alpha.value_or(torch::Scalar(std::int64_t{1})));
  return t;
}

torch::Tensor& sub_in_place(torch::Tensor& t, const Operand& other, const std::optional<torch::Scalar>& alpha) {
  t.sub_(operand_tensor(other), alpha.value_or(torch::Scalar(std::int64_t{1})));
  return t;
}

torch::Tensor& mul_in_place(torch::Tensor& t, const Operand& other) {
  t.mul_(operand_tensor(other));
  return t;
}

torch::Tensor& div_in_place(torch::Tensor& t, const Operand& other) {
  t.div_(operand_tensor(other));
  return t;
}

torch::Tensor& copy_in_place(torch::Tensor& t, const Operand& source) {
  t.copy_(operand_tensor(source));
  return t;
}

torch::Tensor& fill_in_place(torch::Tensor& t, const Operand& value) {
  // Torch 1.13 records autograd history for fill_ even into an integer or bool tensor (from a value
  // that requires grad), leaving it requiring grad: every later op on it then fails an internal
  // assertion. Only floating-point tensors get the differentiable fill.
  const auto v = operand_tensor(value);
  t.fill_(torch::isFloatingType(t.scalar_type()) ? v : v.detach());
  return t;
}

torch::Tensor& zero_in_place(torch::Tensor& t) {
  t.zero_();
  return t;
}

torch::Tensor& uniform_in_place(torch::Tensor& t, std::optional<double> a, std::optional<double> b) {
  t.uniform_(a.value_or(0.0), b.value_or(1.0));
  return t;
}

torch::Tensor& normal_in_place(torch::Tensor& t, std::optional<double> mean, std::optional<double> std) {
  t.normal_(mean.value_or(0.0), std.value_or(1.0));
  return t;
}

torch::Tensor& record_grad(torch::Tensor& t, std::optional<bool> flag) {
  t.requires_grad_(flag.value_or(true));
  return t;
}

torch::Tensor& retain_grad_of(torch::Tensor& t) {
  t.retain_grad();
  return t;
}

torch::Tensor singular_values_of(const torch::Tensor& t) {
  if (t.dim() < 2) throw UsageError("svdvals needs a matrix (or a batch of them), got size " + format_shape(t.sizes()));
  if (!t.is_floating_point() && !t.is_complex()) {
    throw UsageError("svdvals needs a floating-point matrix, got " + dtype_name(t.scalar_type()) + ": convert it first, e.g. t:to(\"float64\")");
  }
  if (t.numel() > 0) {
    const auto bad = torch::isfinite(t).logical_not_();
    if (bad.any().item<bool>()) {
      const auto where = bad.reshape({-1}).nonzero()[0][0].item<std::int64_t>();
      std::string position;
      for (std::int64_t d = t.dim() - 1, rest = where; d >= 0; --d) {  // flat index → 1-based coordinates
        position = integer_text(rest % t.size(d) + 1) + (position.empty() ? "" : ", ") + position;
        rest /= t.size(d);
      }
      const auto value = t.reshape({-1})[where].to(torch::kCPU, torch::kFloat64).item<double>();
      throw UsageError("svdvals: the matrix holds " + describe_number(value) + " at [" + position +
                       "]; singular values need finite entries (replace it first, or find where it came from)");
    }
  }
  return torch::linalg_svdvals(t);
}

}  // namespace lmkit
