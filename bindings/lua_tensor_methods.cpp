// The methods of lmkit.Tensor: the elementwise ones call Torch directly (tables of one line each);
// those with dimensions, positions or optional arguments are runtime/tensor/tensor_methods.h's,
// declared by one line each; the variadic ones (sizes..., dims...) are read here.
#include <string>

#include "bindings/entry_point.h"
#include "bindings/lua_call.h"
#include "bindings/lua_tensor.h"
#include "runtime/core/device.h"
#include "runtime/core/error.h"
#include "runtime/core/number_text.h"
#include "runtime/tensor/tensor_format.h"
#include "runtime/tensor/tensor_options.h"
#include "runtime/tensor/tensor_index.h"
#include "runtime/tensor/tensor_methods.h"

namespace lmkit::lua {
namespace {

torch::Tensor& self(lua_State* L) { return check_tensor(L, 1); }

int push(lua_State* L, torch::Tensor t) {
  push_tensor(L, std::move(t));
  return 1;
}

// Elementwise functions of one tensor.
#define LMKIT_UNARY(name, expr, doc)                                   \
  {                                                                   \
    #name, [](lua_State* L) -> int {                                  \
      auto& t = self(L);                                              \
      return push(L, expr);                                           \
    },                                                                \
    doc                                                               \
  }

#define LMKIT_COMPARISON(name, fn)                                           \
  {                                                                         \
    #name, [](lua_State* L) -> int { return push(L, fn(self(L), check_operand(L, 2))); }, \
    "t:" #name "(other) -> bool Tensor\nElementwise comparison with a tensor or number (broadcasting)." \
  }

const Function kMethods[] = {
    // Shape, type and device.
    method<&sizes_of>("size", "dim", "All sizes as a table, or the size of one (1-based) dimension."),
    {"dim", [](lua_State* L) -> int { lua_pushinteger(L, self(L).dim()); return 1; }, "t:dim() -> integer\nNumber of dimensions."},
    {"numel", [](lua_State* L) -> int { lua_pushinteger(L, self(L).numel()); return 1; }, "t:numel() -> integer\nNumber of elements."},
    {"dtype", [](lua_State* L) -> int { lua_pushstring(L, dtype_name(self(L).scalar_type()).c_str()); return 1; }, "t:dtype() -> string\nElement type: \"float32\", \"float64\", \"int64\", \"bool\", ..."},
    {"device", [](lua_State* L) -> int { lua_pushstring(L, self(L).device().str().c_str()); return 1; }, "t:device() -> string\n\"cpu\" or \"cuda:N\"."},
    method<&converted>("to", "target", "Converts to a dtype or device name, or {dtype=, device=}, e.g. t:to(\"float64\"), t:to(\"cuda\")."),
    LMKIT_UNARY(float, t.to(torch::kFloat32), "t:float() -> Tensor\nAs float32."),
    LMKIT_UNARY(double, t.to(torch::kFloat64), "t:double() -> Tensor\nAs float64."),
    LMKIT_UNARY(half, t.to(torch::kFloat16), "t:half() -> Tensor\nAs float16."),
    LMKIT_UNARY(long, t.to(torch::kInt64), "t:long() -> Tensor\nAs int64."),
    LMKIT_UNARY(int, t.to(torch::kInt32), "t:int() -> Tensor\nAs int32."),
    LMKIT_UNARY(bool, t.to(torch::kBool), "t:bool() -> Tensor\nAs bool (non-zero is true)."),
    LMKIT_UNARY(cpu, t.to(torch::kCPU), "t:cpu() -> Tensor\nCopy on the CPU (itself if there already)."),
    LMKIT_UNARY(cuda, t.to(parse_device("cuda")), "t:cuda() -> Tensor\nCopy on the current CUDA device; an error naming why when CUDA is not usable."),
    method<&item_of>("item", "", "The value of a one-element tensor."),
    {"totable", [](lua_State* L) -> int { push_tensor_as_table(L, self(L)); return 1; }, "t:totable() -> table | number\nNested Lua tables of the values (a number for a 0-d tensor)."},
    LMKIT_UNARY(clone, t.clone(), "t:clone() -> Tensor\nA copy with its own storage (differentiable)."),
    LMKIT_UNARY(detach, t.detach(), "t:detach() -> Tensor\nThe same data, cut from the autograd graph."),
    LMKIT_UNARY(contiguous, t.contiguous(), "t:contiguous() -> Tensor\nItself if contiguous, else a contiguous copy."),
    method<&viewed>("view", "sizes", "The same storage seen with other sizes (one may be -1)."),
    method<&reshaped>("reshape", "sizes", "Like view, copying when needed."),
    method<&expanded>("expand", "sizes", "Broadcast view to larger sizes (-1 keeps a size)."),
    LMKIT_UNARY(t, t.dim() < 2 ? t : t.t(), "t:t() -> Tensor\nTranspose of a matrix (a vector is returned as is)."),
    method<&transpose_of>("transpose", "dim1, dim2", "Swaps two dimensions."),
    method<&permuted>("permute", "dims", "Reorders dimensions, e.g. t:permute(2, 1, 3)."),
    method<&unsqueeze_at>("unsqueeze", "dim", "Inserts a dimension of size 1 at position dim (1..t:dim()+1)."),
    method<&squeeze_at>("squeeze", "dim", "Removes dimensions of size 1 (all, or the one given)."),
    method<&flatten_between>("flatten", "start_dim, end_dim", "Merges dimensions start..end (default: all) into one."),
    method<&narrow_along>("narrow", "dim, start, length", "View of `length` entries from `start` (1-based) along dim."),
    method<&select_along>("select", "dim, index", "View at one (1-based) index of dim, removing that dimension."),
    method<&index_select_along>("index_select", "dim, ids", "Entries at the 1-based indices `ids` (int64 Tensor) along dim."),
    // Arithmetic and elementwise math.
    method<&added>("add", "other, alpha", "t + alpha*other."),
    method<&subtracted>("sub", "other, alpha", "t - alpha*other."),
    {"mul", [](lua_State* L) -> int { return push(L, torch::mul(self(L), check_operand(L, 2))); }, "t:mul(other) -> Tensor\nElementwise product (also t * other)."},
    {"div", [](lua_State* L) -> int { return push(L, torch::div(self(L), check_operand(L, 2))); }, "t:div(other) -> Tensor\nElementwise true division (also t / other)."},
    {"pow", [](lua_State* L) -> int { return push(L, torch::pow(self(L), check_operand(L, 2))); }, "t:pow(exponent) -> Tensor\nElementwise power (also t ^ e)."},
    {"matmul", [](lua_State* L) -> int { return push(L, torch::matmul(self(L), check_tensor(L, 2))); }, "t:matmul(other) -> Tensor\nMatrix product with broadcasting (vectors, matrices, batches)."},
    {"dot", [](lua_State* L) -> int { return push(L, torch::dot(self(L), check_tensor(L, 2))); }, "t:dot(other) -> Tensor\nInner product of two vectors."},
    {"outer", [](lua_State* L) -> int { return push(L, torch::outer(self(L), check_tensor(L, 2))); }, "t:outer(other) -> Tensor\nOuter product of two vectors."},
    LMKIT_UNARY(neg, torch::neg(t), "t:neg() -> Tensor\n-t."),
    LMKIT_UNARY(abs, torch::abs(t), "t:abs() -> Tensor\n|t|."),
    LMKIT_UNARY(sign, torch::sign(t), "t:sign() -> Tensor\n-1, 0 or 1 per element."),
    LMKIT_UNARY(exp, torch::exp(t), "t:exp() -> Tensor\ne^t."),
    LMKIT_UNARY(log, torch::log(t), "t:log() -> Tensor\nNatural logarithm."),
    LMKIT_UNARY(log1p, torch::log1p(t), "t:log1p() -> Tensor\nlog(1 + t), exact for small t."),
    LMKIT_UNARY(expm1, torch::expm1(t), "t:expm1() -> Tensor\ne^t - 1, exact for small t."),
    LMKIT_UNARY(sqrt, torch::sqrt(t), "t:sqrt() -> Tensor\nSquare root."),
    LMKIT_UNARY(square, torch::square(t), "t:square() -> Tensor\nt^2."),
    LMKIT_UNARY(reciprocal, torch::reciprocal(t), "t:reciprocal() -> Tensor\n1/t."),
    LMKIT_UNARY(sin, torch::sin(t), "t:sin() -> Tensor\nSine."),
    LMKIT_UNARY(cos, torch::cos(t), "t:cos() -> Tensor\nCosine."),
    LMKIT_UNARY(tanh, torch::tanh(t), "t:tanh() -> Tensor\nHyperbolic tangent."),
    LMKIT_UNARY(sigmoid, torch::sigmoid(t), "t:sigmoid() -> Tensor\n1/(1+e^-t)."),
    LMKIT_UNARY(relu, torch::relu(t), "t:relu() -> Tensor\nmax(t, 0)."),
    LMKIT_UNARY(softplus, torch::softplus(t), "t:softplus() -> Tensor\nlog(1 + e^t), computed stably."),
    LMKIT_UNARY(floor, torch::floor(t), "t:floor() -> Tensor\nRounds down."),
    LMKIT_UNARY(ceil, torch::ceil(t), "t:ceil() -> Tensor\nRounds up."),
    LMKIT_UNARY(round, torch::round(t), "t:round() -> Tensor\nRounds half to even."),
    method<&clamp_between>("clamp", "min, max", "Limits values to [min, max]; pass nil for an open end."),
    method<&softmax_along>("softmax", "dim", "exp(t)/sum(exp(t)) along dim (default: last), stable."),
    method<&log_softmax_along>("log_softmax", "dim", "t - logsumexp(t) along dim (default: last)."),
    method<&cumsum_along>("cumsum", "dim", "Cumulative sum along dim."),
    // Reductions.
    method<&sum_over>("sum", "dims, keepdim", "Sum of all elements, or along a dimension or a table of them."),
    method<&mean_over>("mean", "dims, keepdim", "Mean of all elements, or along dimensions."),
    method<&std_over>("std", "dims, keepdim", "Sample standard deviation (n-1)."),
    method<&var_over>("var", "dims, keepdim", "Sample variance (n-1)."),
    method<&logsumexp_over>("logsumexp", "dims, keepdim", "log(sum(exp(t))), stable."),
    LMKIT_UNARY(prod, t.prod(), "t:prod() -> Tensor\nProduct of all elements."),
    method<&max_along>("max", "dim, keepdim", "Largest element, or values and 1-based indices along dim."),
    method<&min_along>("min", "dim, keepdim", "Smallest element, or values and 1-based indices along dim."),
    method<&argmax_along>("argmax", "dim, keepdim", "1-based index of the largest element (flattened, or along dim)."),
    method<&argmin_along>("argmin", "dim, keepdim", "1-based index of the smallest element (flattened, or along dim)."),
    method<&norm_over>("norm", "p, dims, keepdim", "p-norm (default 2) of all elements or along dims."),
    method<&top_k_along>("topk", "k, dim, largest", "The k largest (or smallest) entries along dim (default: last), sorted; 1-based indices."),
    method<&sort_along>("sort", "dim, descending", "Sorted along dim (default: last); 1-based indices."),
    LMKIT_UNARY(all, t.all(), "t:all() -> bool Tensor\nTrue when every element is non-zero."),
    LMKIT_UNARY(any, t.any(), "t:any() -> bool Tensor\nTrue when some element is non-zero."),
    LMKIT_UNARY(isfinite, torch::isfinite(t), "t:isfinite() -> bool Tensor\nElementwise: neither inf nor nan."),
    LMKIT_UNARY(isnan, torch::isnan(t), "t:isnan() -> bool Tensor\nElementwise: nan."),
    // Comparisons.
    LMKIT_COMPARISON(eq, torch::eq),
    LMKIT_COMPARISON(ne, torch::ne),
    LMKIT_COMPARISON(lt, torch::lt),
    LMKIT_COMPARISON(le, torch::le),
    LMKIT_COMPARISON(gt, torch::gt),
    LMKIT_COMPARISON(ge, torch::ge),
    method<&equal_to>("equal", "other", "Same sizes and the same elements (also t == other)."),
    method<&all_close>("allclose", "other, rtol, atol", "|t - other| <= atol + rtol*|other| everywhere (defaults 1e-5, 1e-8)."),
    // Linear algebra.
    LMKIT_UNARY(svdvals, singular_values_of(t), "t:svdvals() -> Tensor\nSingular values of a matrix (or batch), descending, in the tensor's precision; a NaN or ±Inf entry is an error naming its place."),
    // In place.
    method<&add_in_place>("add_", "other, alpha", "t += alpha*other, in place."),
    method<&sub_in_place>("sub_", "other, alpha", "t -= alpha*other, in place."),
    method<&mul_in_place>("mul_", "other", "t *= other, in place."),
    method<&div_in_place>("div_", "other", "t /= other, in place."),
    method<&copy_in_place>("copy_", "src", "Copies src's values into t (broadcasting, converting)."),
    method<&fill_in_place>("fill_", "value", "Sets every element to a number (or one-element tensor)."),
    method<&zero_in_place>("zero_", "", "Sets every element to 0."),
    method<&uniform_in_place>("uniform_", "a, b", "Fills with U(a, b) draws (default U(0, 1))."),
    method<&normal_in_place>("normal_", "mean, std", "Fills with N(mean, std^2) draws (default N(0, 1))."),
    // Autograd.
    method<&backward_from>("backward", "gradient", "Back-propagates from t (a one-element loss, or with the gradient given); fills .grad of leaves."),
    method<&record_grad>("requires_grad_", "flag", "Starts (or stops) recording operations on t for autograd."),
    method<&retain_grad_of>("retain_grad", "", "Keeps .grad of a non-leaf tensor after backward."),
};

#undef LMKIT_UNARY
#undef LMKIT_COMPARISON

}  // namespace

std::vector<std::string> tensor_method_names() {
  std::vector<std::string> names;
  for (const auto& f : kMethods) names.emplace_back(f.name);
  return names;
}

void push_tensor_methods(lua_State* L) {
  lua_newtable(L);
  set_functions(L, -1, "Tensor", kMethods, /*methods=*/true);
}

}  // namespace lmkit::lua
