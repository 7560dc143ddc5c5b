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

// In-place arithmetic with an optional scale: t:add_(other[, alpha]) is t += alpha*other.
#define LMKIT_INPLACE(name, expr, doc)                                 \
  {                                                                   \
    #name, [](lua_State* L) -> int {                                  \
      auto& t = self(L);                                              \
      auto other = check_operand(L, 2);                               \
      expr;                                                           \
      lua_settop(L, 1);                                               \
      return 1;                                                       \
    },                                                                \
    doc                                                               \
  }

int method_size(lua_State* L) {
  auto& t = self(L);
  if (!lua_isnoneornil(L, 2)) {
    lua_pushinteger(L, t.size(check_dim(L, 2, t)));
    return 1;
  }
  lua_createtable(L, static_cast<int>(t.dim()), 0);
  for (int64_t d = 0; d < t.dim(); ++d) {
    lua_pushinteger(L, t.size(d));
    lua_rawseti(L, -2, d + 1);
  }
  return 1;
}

int method_item(lua_State* L) {
  auto& t = self(L);
  if (t.numel() != 1) {
    throw UsageError("item() needs a one-element tensor, this one has size " + format_shape(t.sizes()));
  }
  if (t.scalar_type() == torch::kBool) {
    lua_pushboolean(L, t.item<bool>());
  } else if (torch::isIntegralType(t.scalar_type(), false)) {
    lua_pushinteger(L, t.item<int64_t>());
  } else {
    lua_pushnumber(L, t.item<double>());
  }
  return 1;
}

int method_to(lua_State* L) {
  auto& t = self(L);
  if (lua_type(L, 2) == LUA_TSTRING) {
    const std::string target = lua_tostring(L, 2);
    const bool is_device = target == "cpu" || target.rfind("cuda", 0) == 0;
    if (is_device) return push(L, t.to(parse_device(target)));
    try {
      return push(L, t.to(parse_dtype(target)));
    } catch (const UsageError& e) {
      throw ArgError(2, std::string(e.what()) + "; or a device: \"cpu\", \"cuda\", \"cuda:N\"");
    }
  }
  if (lua_type(L, 2) != LUA_TTABLE) type_error(L, 2, "dtype name, device name or {dtype=, device=}");
  return push(L, convert(t, entry_detail::read<ConvertSpec>(L, 2, entry_detail::Where{2, ""})));
}

std::vector<int64_t> check_signed_sizes(lua_State* L, int position) {
  if (lua_type(L, position) == LUA_TTABLE) {
    const auto listed = check_integer_list(L, position, "sizes");
    return std::vector<int64_t>(listed.begin(), listed.end());
  }
  std::vector<int64_t> sizes;
  for (int i = position; !lua_isnone(L, i); ++i) sizes.push_back(check_integer(L, i));
  return sizes;
}

int method_view(lua_State* L) { return push(L, self(L).view(check_signed_sizes(L, 2))); }
int method_reshape(lua_State* L) { return push(L, self(L).reshape(check_signed_sizes(L, 2))); }
int method_expand(lua_State* L) { return push(L, self(L).expand(check_signed_sizes(L, 2))); }

int method_permute(lua_State* L) {
  auto& t = self(L);
  std::vector<int64_t> dims;
  if (lua_type(L, 2) == LUA_TTABLE) {
    for (const auto d : check_integer_list(L, 2, "dimensions")) {
      try {
        dims.push_back(resolve_dim(d, t.dim()));
      } catch (const UsageError& e) {
        throw ArgError(2, e.what());
      }
    }
  } else {
    for (int i = 2; !lua_isnone(L, i); ++i) dims.push_back(check_dim(L, i, t));
  }
  return push(L, t.permute(dims));
}

const Function kMethods[] = {
    // Shape, type and device.
    {"size", method_size, "t:size([dim]) -> {sizes...} | integer\nAll sizes as a table, or the size of one (1-based) dimension."},
    {"dim", [](lua_State* L) -> int { lua_pushinteger(L, self(L).dim()); return 1; }, "t:dim() -> integer\nNumber of dimensions."},
    {"numel", [](lua_State* L) -> int { lua_pushinteger(L, self(L).numel()); return 1; }, "t:numel() -> integer\nNumber of elements."},
    {"dtype", [](lua_State* L) -> int { lua_pushstring(L, dtype_name(self(L).scalar_type()).c_str()); return 1; }, "t:dtype() -> string\nElement type: \"float32\", \"float64\", \"int64\", \"bool\", ..."},
    {"device", [](lua_State* L) -> int { lua_pushstring(L, self(L).device().str().c_str()); return 1; }, "t:device() -> string\n\"cpu\" or \"cuda:N\"."},
    {"to", method_to, "t:to(dtype | device | {dtype=, device=}) -> Tensor\nConverts, e.g. t:to(\"float64\"), t:to(\"cuda\")."},
    LMKIT_UNARY(float, t.to(torch::kFloat32), "t:float() -> Tensor\nAs float32."),
    LMKIT_UNARY(double, t.to(torch::kFloat64), "t:double() -> Tensor\nAs float64."),
    LMKIT_UNARY(half, t.to(torch::kFloat16), "t:half() -> Tensor\nAs float16."),
    LMKIT_UNARY(long, t.to(torch::kInt64), "t:long() -> Tensor\nAs int64."),
    LMKIT_UNARY(int, t.to(torch::kInt32), "t:int() -> Tensor\nAs int32."),
    LMKIT_UNARY(bool, t.to(torch::kBool), "t:bool() -> Tensor\nAs bool (non-zero is true)."),
    LMKIT_UNARY(cpu, t.to(torch::kCPU), "t:cpu() -> Tensor\nCopy on the CPU (itself if there already)."),
    LMKIT_UNARY(cuda, t.to(parse_device("cuda")), "t:cuda() -> Tensor\nCopy on the current CUDA device; an error naming why when CUDA is not usable."),
    {"item", method_item, "t:item() -> number | integer | boolean\nThe value of a one-element tensor."},
    {"totable", [](lua_State* L) -> int { push_tensor_as_table(L, self(L)); return 1; }, "t:totable() -> table | number\nNested Lua tables of the values (a number for a 0-d tensor)."},
    LMKIT_UNARY(clone, t.clone(), "t:clone() -> Tensor\nA copy with its own storage (differentiable)."),
    LMKIT_UNARY(detach, t.detach(), "t:detach() -> Tensor\nThe same data, cut from the autograd graph."),
    LMKIT_UNARY(contiguous, t.contiguous(), "t:contiguous() -> Tensor\nItself if contiguous, else a contiguous copy."),
    {"view", method_view, "t:view(sizes...) -> Tensor\nThe same storage seen with other sizes (one may be -1)."},
    {"reshape", method_reshape, "t:reshape(sizes...) -> Tensor\nLike view, copying when needed."},
    {"expand", method_expand, "t:expand(sizes...) -> Tensor\nBroadcast view to larger sizes (-1 keeps a size)."},
    LMKIT_UNARY(t, t.dim() < 2 ? t : t.t(), "t:t() -> Tensor\nTranspose of a matrix (a vector is returned as is)."),
    method<&transpose_of>("transpose", "dim1, dim2", "Swaps two dimensions."),
    {"permute", method_permute, "t:permute(dims...) -> Tensor\nReorders dimensions, e.g. t:permute(2, 1, 3)."},
    method<&unsqueeze_at>("unsqueeze", "dim", "Inserts a dimension of size 1 at position dim (1..t:dim()+1)."),
    method<&squeeze_at>("squeeze", "dim", "Removes dimensions of size 1 (all, or the one given)."),
    method<&flatten_between>("flatten", "start_dim, end_dim", "Merges dimensions start..end (default: all) into one."),
    method<&narrow_along>("narrow", "dim, start, length", "View of `length` entries from `start` (1-based) along dim."),
    method<&select_along>("select", "dim, index", "View at one (1-based) index of dim, removing that dimension."),
    method<&index_select_along>("index_select", "dim, ids", "Entries at the 1-based indices `ids` (int64 Tensor) along dim."),
    // Arithmetic and elementwise math.
    {"add", [](lua_State* L) -> int { return push(L, torch::add(self(L), check_operand(L, 2), opt_number(L, 3).value_or(1.0))); }, "t:add(other[, alpha]) -> Tensor\nt + alpha*other."},
    {"sub", [](lua_State* L) -> int { return push(L, torch::sub(self(L), check_operand(L, 2), opt_number(L, 3).value_or(1.0))); }, "t:sub(other[, alpha]) -> Tensor\nt - alpha*other."},
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
    LMKIT_UNARY(svdvals, torch::linalg_svdvals(t), "t:svdvals() -> Tensor\nSingular values of a matrix (or batch), descending, in the tensor's precision."),
    // In place.
    LMKIT_INPLACE(add_, t.add_(other, opt_number(L, 3).value_or(1.0)), "t:add_(other[, alpha]) -> t\nt += alpha*other, in place."),
    LMKIT_INPLACE(sub_, t.sub_(other, opt_number(L, 3).value_or(1.0)), "t:sub_(other[, alpha]) -> t\nt -= alpha*other, in place."),
    LMKIT_INPLACE(mul_, t.mul_(other), "t:mul_(other) -> t\nt *= other, in place."),
    LMKIT_INPLACE(div_, t.div_(other), "t:div_(other) -> t\nt /= other, in place."),
    LMKIT_INPLACE(copy_, t.copy_(other), "t:copy_(src) -> t\nCopies src's values into t (broadcasting, converting)."),
    // Torch 1.13 records autograd history for fill_ even into an integer or bool tensor (from a
    // value that requires grad), leaving it requiring grad: every later op on it then fails an
    // internal assertion. Only floating-point tensors get the differentiable fill.
    LMKIT_INPLACE(fill_, t.fill_(torch::isFloatingType(t.scalar_type()) ? other : other.detach()),
                  "t:fill_(value) -> t\nSets every element to a number (or one-element tensor)."),
    {"zero_", [](lua_State* L) -> int { self(L).zero_(); lua_settop(L, 1); return 1; }, "t:zero_() -> t\nSets every element to 0."},
    {"uniform_", [](lua_State* L) -> int { self(L).uniform_(opt_number(L, 2).value_or(0.0), opt_number(L, 3).value_or(1.0)); lua_settop(L, 1); return 1; }, "t:uniform_([a[, b]]) -> t\nFills with U(a, b) draws (default U(0, 1))."},
    {"normal_", [](lua_State* L) -> int { self(L).normal_(opt_number(L, 2).value_or(0.0), opt_number(L, 3).value_or(1.0)); lua_settop(L, 1); return 1; }, "t:normal_([mean[, std]]) -> t\nFills with N(mean, std^2) draws (default N(0, 1))."},
    // Autograd.
    method<&backward_from>("backward", "gradient", "Back-propagates from t (a one-element loss, or with the gradient given); fills .grad of leaves."),
    {"requires_grad_", [](lua_State* L) -> int { self(L).requires_grad_(opt_boolean(L, 2).value_or(true)); lua_settop(L, 1); return 1; }, "t:requires_grad_([flag]) -> t\nStarts (or stops) recording operations on t for autograd."},
    {"retain_grad", [](lua_State* L) -> int { self(L).retain_grad(); lua_settop(L, 1); return 1; }, "t:retain_grad() -> t\nKeeps .grad of a non-leaf tensor after backward."},
};

#undef LMKIT_UNARY
#undef LMKIT_COMPARISON
#undef LMKIT_INPLACE

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
