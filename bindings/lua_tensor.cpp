#include "bindings/lua_tensor.h"

#include <algorithm>
#include <new>
#include <string>
#include <type_traits>

#include "bindings/entry_point.h"
#include "bindings/lua_call.h"
#include "bindings/lua_collector.h"
#include "runtime/core/error.h"
#include "runtime/tensor/nested_list.h"
#include "runtime/core/number_text.h"
#include "runtime/tensor/tensor_factories.h"
#include "runtime/tensor/tensor_format.h"
#include "runtime/tensor/tensor_index.h"
#include "runtime/tensor/tensor_methods.h"

namespace lmkit::lua {
namespace {

struct TensorBox {
  torch::Tensor tensor;
};

// One Lua index value (a number, a {start, stop[, step]} table, {} or a tensor) → IndexSpec.
IndexSpec to_index_spec(lua_State* L, int position, int argument) {
  position = lua_absindex(L, position);
  switch (lua_type(L, position)) {
    case LUA_TNUMBER: {
      int ok = 0;
      const auto i = lua_tointegerx(L, position, &ok);
      if (!ok) throw ArgError(argument, "index must be an integer");
      return IndexSpec::select(i);
    }
    case LUA_TTABLE: {
      const auto n = lua_rawlen(L, position);
      if (n > 3) throw ArgError(argument, "a range is {start, stop[, step]}, got a table of " + integer_text(n));
      std::int64_t bounds[3] = {1, -1, 1};
      for (lua_Unsigned k = 1; k <= n; ++k) {
        lua_rawgeti(L, position, static_cast<lua_Integer>(k));
        int ok = 0;
        bounds[k - 1] = lua_tointegerx(L, -1, &ok);
        lua_pop(L, 1);
        if (!ok) throw ArgError(argument, "range bounds must be integers");
      }
      return n == 0 ? IndexSpec::all() : IndexSpec::range(bounds[0], bounds[1], bounds[2]);
    }
    default:
      if (auto* t = test_tensor(L, position)) return IndexSpec::of(*t);
      throw ArgError(argument, std::string("index must be an integer, a {start, stop} range, {} or a "
                                           "tensor, got ") + luaL_typename(L, position));
  }
}

// The key of t[key]: one spec, or a table of per-dimension specs.
std::vector<IndexSpec> to_index_specs(lua_State* L, int position) {
  std::vector<IndexSpec> specs;
  if (lua_type(L, position) == LUA_TTABLE) {
    const auto n = lua_rawlen(L, position);
    for (lua_Unsigned k = 1; k <= n; ++k) {
      lua_rawgeti(L, position, static_cast<lua_Integer>(k));
      specs.push_back(to_index_spec(L, -1, position));
      lua_pop(L, 1);
    }
  } else {
    specs.push_back(to_index_spec(L, position, position));
  }
  return specs;
}

int tensor_gc(lua_State* L) {
  auto* box = static_cast<TensorBox*>(luaL_testudata(L, 1, kTensorMetatable));
  if (box) box->tensor = torch::Tensor();  // releases the storage; the box stays valid
  return 0;
}

int tensor_tostring(lua_State* L) {
  const std::string text = format_tensor(check_tensor(L, 1));
  lua_pushlstring(L, text.data(), text.size());
  return 1;
}

// t.grad, t.requires_grad, t.is_leaf, t.grad_fn; t[i], t[{...}], t[mask]; methods.
int tensor_index(lua_State* L) {
  auto& t = check_tensor(L, 1);
  if (lua_type(L, 2) == LUA_TSTRING) {
    if (push_method(L, 1, 2)) return 1;
    const std::string key = lua_tostring(L, 2);
    if (!push_field_of(L, autograd_fields(t), key)) {
      throw UsageError("Tensor has no method or field '" + key + "' (see help(lmkit.Tensor))");
    }
    return 1;
  }
  push_tensor(L, index_tensor(t, to_index_specs(L, 2)));
  return 1;
}

int tensor_newindex(lua_State* L) {
  auto& t = check_tensor(L, 1);
  if (lua_type(L, 2) == LUA_TSTRING) {
    const std::string key = lua_tostring(L, 2);
    if (key == "requires_grad") {
      t.requires_grad_(check_boolean(L, 3));
    } else if (key == "grad") {
      if (lua_isnil(L, 3)) {
        t.mutable_grad() = torch::Tensor();
      } else {
        t.mutable_grad() = check_tensor(L, 3);
      }
    } else {
      throw UsageError("cannot set field '" + key + "' of a Tensor (settable: requires_grad, grad)");
    }
    return 0;
  }
  assign_index(t, to_index_specs(L, 2), check_operand(L, 3));
  return 0;
}

int tensor_len(lua_State* L) {
  auto& t = check_tensor(L, 1);
  if (t.dim() == 0) throw ArgError(1, "#t of a 0-d tensor: it has no first dimension (use :item())");
  lua_pushinteger(L, t.size(0));
  return 1;
}

template <torch::Tensor (*Op)(const torch::Tensor&, const torch::Tensor&)>
int binary_metamethod(lua_State* L) {
  push_tensor(L, Op(check_operand(L, 1), check_operand(L, 2)));
  return 1;
}

torch::Tensor op_add(const torch::Tensor& a, const torch::Tensor& b) { return torch::add(a, b); }
torch::Tensor op_sub(const torch::Tensor& a, const torch::Tensor& b) { return torch::sub(a, b); }
torch::Tensor op_mul(const torch::Tensor& a, const torch::Tensor& b) { return torch::mul(a, b); }
torch::Tensor op_div(const torch::Tensor& a, const torch::Tensor& b) { return torch::div(a, b); }
torch::Tensor op_pow(const torch::Tensor& a, const torch::Tensor& b) { return torch::pow(a, b); }
// Lua's % and // floor, as torch.remainder and floor division do.
torch::Tensor op_mod(const torch::Tensor& a, const torch::Tensor& b) { return torch::remainder(a, b); }
torch::Tensor op_idiv(const torch::Tensor& a, const torch::Tensor& b) {
  return torch::div(a, b, "floor");
}

int tensor_unm(lua_State* L) {
  push_tensor(L, torch::neg(check_tensor(L, 1)));
  return 1;
}

// a == b: same shape and equal elements (Lua needs a boolean here; t:eq(u) is elementwise).
int tensor_eq(lua_State* L) {
  auto* a = test_tensor(L, 1);
  auto* b = test_tensor(L, 2);
  lua_pushboolean(L, a && b && same_sizes_and_values(*a, *b));
  return 1;
}

// a < b and a <= b compare one-element tensors (or a tensor and a number) as numbers.
double one_element_value(lua_State* L, int position) {
  return lua_type(L, position) == LUA_TNUMBER ? lua_tonumber(L, position) : one_element_number(check_tensor(L, position));
}

int tensor_lt(lua_State* L) {
  lua_pushboolean(L, one_element_value(L, 1) < one_element_value(L, 2));
  return 1;
}

int tensor_le(lua_State* L) {
  lua_pushboolean(L, one_element_value(L, 1) <= one_element_value(L, 2));
  return 1;
}

const Function kMetamethods[] = {
    {"__gc", tensor_gc, nullptr, "Tensor finalizer"},
    {"__close", tensor_gc, nullptr, "Tensor close"},
    {"__tostring", tensor_tostring, nullptr, "tostring(Tensor)"},
    {"__index", tensor_index, nullptr, "Tensor indexing"},
    {"__newindex", tensor_newindex, nullptr, "Tensor assignment"},
    {"__len", tensor_len, nullptr, "'#' on a Tensor"},
    {"__add", binary_metamethod<op_add>, nullptr, "'+' on Tensors"},
    {"__sub", binary_metamethod<op_sub>, nullptr, "'-' on Tensors"},
    {"__mul", binary_metamethod<op_mul>, nullptr, "'*' on Tensors"},
    {"__div", binary_metamethod<op_div>, nullptr, "'/' on Tensors"},
    {"__pow", binary_metamethod<op_pow>, nullptr, "'^' on Tensors"},
    {"__mod", binary_metamethod<op_mod>, nullptr, "'%' on Tensors"},
    {"__idiv", binary_metamethod<op_idiv>, nullptr, "'//' on Tensors"},
    {"__unm", tensor_unm, nullptr, "unary '-' on a Tensor"},
    {"__eq", tensor_eq, nullptr, "'==' on Tensors"},
    {"__lt", tensor_lt, nullptr, "'<' on Tensors"},
    {"__le", tensor_le, nullptr, "'<=' on Tensors"},
};

const char* kTensorDoc =
    "lmkit.Tensor — an n-dimensional array (LibTorch) with autograd.\n"
    "Indexing is 1-based: t[i] selects along the first dimension, t[{i, {a, b}, {}}] selects/ranges\n"
    "per dimension (ranges inclusive, -1 = last, {} = all), t[mask] and t[ids] take a boolean mask\n"
    "or a tensor of 1-based indices; assignment t[...] = value writes in place.\n"
    "Operators: + - * / % // ^ (elementwise, broadcasting), unary -, == (same shape and values),\n"
    "< <= (one-element tensors). Fields: t.grad, t.requires_grad (settable), t.is_leaf, t.grad_fn.";

}  // namespace

torch::Tensor* test_tensor(lua_State* L, int position) {
  auto* box = static_cast<TensorBox*>(luaL_testudata(L, position, kTensorMetatable));
  return box ? &box->tensor : nullptr;
}

torch::Tensor& check_tensor(lua_State* L, int position) {
  auto* t = test_tensor(L, position);
  if (!t) type_error(L, position, "Tensor");
  if (!t->defined()) throw ArgError(position, "tensor was already closed or collected");
  return *t;
}

torch::Tensor& push_new_tensor(lua_State* L) {
  void* memory = lua_newuserdatauv(L, sizeof(TensorBox), 0);
  auto* box = new (memory) TensorBox();
  luaL_setmetatable(L, kTensorMetatable);
  return box->tensor;
}

void push_tensor(lua_State* L, torch::Tensor tensor) {
  pace_collector(L, tensor);  // before the box exists: the collection cannot reach this tensor
  push_new_tensor(L) = std::move(tensor);
}

torch::Tensor check_operand(lua_State* L, int position) {
  switch (lua_type(L, position)) {
    case LUA_TNUMBER:
      if (lua_isinteger(L, position)) return operand_tensor(torch::Scalar(static_cast<int64_t>(lua_tointeger(L, position))));
      return operand_tensor(torch::Scalar(lua_tonumber(L, position)));
    case LUA_TBOOLEAN:
      return operand_tensor(torch::Scalar(static_cast<bool>(lua_toboolean(L, position))));
    default:
      if (auto* t = test_tensor(L, position)) return *t;
      type_error(L, position, "Tensor or number");
  }
}

namespace {

// What build_nested_table reads: plain data and raw pointers only. It runs under lua_pcall, where a
// Lua memory error (a big tensor, little memory) longjmps out, and that must skip no destructor.
struct NestedTableJob {
  const void* data;
  const std::int64_t* sizes;
  std::size_t dims;
  torch::ScalarType type;  // kBool, kInt64 or kFloat64
};

template <typename T>
void push_nested(lua_State* L, const T* data, const NestedTableJob& job, std::size_t dim, std::int64_t& offset) {
  const auto n = job.sizes[dim];
  luaL_checkstack(L, 2, "tensor too deep for the Lua stack");
  lua_createtable(L, static_cast<int>(std::min<std::int64_t>(n, 1 << 20)), 0);
  for (std::int64_t i = 0; i < n; ++i) {
    if (dim + 1 == job.dims) {
      const T v = data[offset++];
      if constexpr (std::is_same_v<T, bool>) {
        lua_pushboolean(L, v);
      } else if constexpr (std::is_integral_v<T>) {
        lua_pushinteger(L, v);
      } else {
        lua_pushnumber(L, v);
      }
    } else {
      push_nested(L, data, job, dim + 1, offset);
    }
    lua_rawseti(L, -2, i + 1);
  }
}

int build_nested_table(lua_State* L) {
  const auto& job = *static_cast<const NestedTableJob*>(lua_touserdata(L, 1));
  std::int64_t offset = 0;
  if (job.type == torch::kBool) {
    push_nested(L, static_cast<const bool*>(job.data), job, 0, offset);
  } else if (job.type == torch::kInt64) {
    push_nested(L, static_cast<const std::int64_t*>(job.data), job, 0, offset);
  } else {
    push_nested(L, static_cast<const double*>(job.data), job, 0, offset);
  }
  return 1;
}

}  // namespace

void push_tensor_as_table(lua_State* L, const torch::Tensor& tensor) {
  const auto values = values_for_nested_lists(tensor);
  if (values.dim() == 0) {
    entry_detail::push(L, item_of(values));  // a boolean, an integer or a number
    return;
  }
  const auto sizes = values.sizes().vec();
  NestedTableJob job{values.data_ptr(), sizes.data(), sizes.size(), values.scalar_type()};
  lua_pushcfunction(L, build_nested_table);
  lua_pushlightuserdata(L, &job);
  if (lua_pcall(L, 1, 1, 0) != LUA_OK) throw PendingLuaError();
}

void open_tensor(lua_State* L) {
  luaL_newmetatable(L, kTensorMetatable);
  lua_pushliteral(L, "Tensor");  // shown in "Tensor expected, got ..." messages
  lua_setfield(L, -2, "__name");
  set_functions(L, -1, "Tensor", kMetamethods);
  push_tensor_methods(L);
  lua_setfield(L, -2, "methods");  // read by __index, the REPL's completion and help()
  register_doc(L, -1, "lmkit.Tensor", kTensorDoc);
  lua_pop(L, 1);
}

}  // namespace lmkit::lua
