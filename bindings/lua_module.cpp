// lmkit's top-level functions: tensor constructors, process settings, autograd switches.
#include <new>
#include <string>

#include "bindings/entry_point.h"
#include "bindings/lua_call.h"
#include "bindings/lua_config.h"
#include "bindings/lua_module.h"
#include "bindings/lua_tensor.h"
#include "ops/device_memory.h"
#include "runtime/config/json_text.h"
#include "runtime/config/option_schema.h"
#include "runtime/core/atomic_file.h"
#include "runtime/core/clock.h"
#include "runtime/core/determinism.h"
#include "runtime/core/device.h"
#include "runtime/core/error.h"
#include "runtime/core/number_text.h"
#include "runtime/core/tensor_memory.h"
#include "runtime/core/terminal_text.h"
#include "runtime/core/version.h"
#include "runtime/tensor/nested_list.h"
#include "runtime/tensor/tensor_index.h"
#include "runtime/tensor/tensor_factories.h"
#include "runtime/tensor_files/tensor_file.h"
#include "runtime/tensor/tensor_format.h"
#include "runtime/tensor/tensor_options.h"

namespace lmkit::lua {
namespace {

TensorSpec read_spec(lua_State* L, int position) {
  return entry_detail::read<TensorSpec>(L, position, entry_detail::Where{position, ""});
}

void walk_nested(lua_State* L, int position, NestedListBuilder& builder, int depth) {
  if (depth > kMaxNestedListDepth) {
    throw ArgError(1, "nested tables deeper than " + integer_text(kMaxNestedListDepth) + " levels (a cycle?)");
  }
  if (!lua_checkstack(L, 2)) throw std::bad_alloc();
  position = lua_absindex(L, position);
  switch (lua_type(L, position)) {
    case LUA_TNUMBER:
      if (lua_isinteger(L, position)) {
        builder.add_integer(lua_tointeger(L, position));
      } else {
        builder.add_number(lua_tonumber(L, position));
      }
      return;
    case LUA_TBOOLEAN:
      builder.add_boolean(lua_toboolean(L, position));
      return;
    case LUA_TTABLE: {
      builder.open_list();
      const auto n = lua_rawlen(L, position);
      for (lua_Unsigned k = 1; k <= n; ++k) {
        lua_rawgeti(L, position, static_cast<lua_Integer>(k));
        walk_nested(L, -1, builder, depth + 1);
        lua_pop(L, 1);
      }
      builder.close_list();
      return;
    }
    default:
      throw ArgError(1, std::string("tensor data must be numbers, booleans or nested tables of them, "
                                    "found a ") + luaL_typename(L, position));
  }
}

int lmkit_tensor(lua_State* L) {
  if (auto* t = test_tensor(L, 1)) {  // lmkit.tensor(t) copies, like torch.tensor
    auto options = tensor_options(read_spec(L, 2), t->options().requires_grad(false));
    return push_tensor(L, t->detach().to(options).clone().requires_grad_(options.requires_grad())), 1;
  }
  const int type = lua_type(L, 1);
  if (type != LUA_TTABLE && type != LUA_TNUMBER && type != LUA_TBOOLEAN) {
    type_error(L, 1, "table, number or boolean");
  }
  NestedListBuilder builder;
  walk_nested(L, 1, builder, 0);
  const auto spec = read_spec(L, 2);
  auto t = builder.build(spec.convert.dtype ? std::optional<torch::ScalarType>(parse_dtype(*spec.convert.dtype)) : std::nullopt);
  if (spec.convert.device) t = t.to(parse_device(*spec.convert.device));
  if (spec.requires_grad.value_or(false)) t.requires_grad_(true);
  push_tensor(L, t);
  return 1;
}

// full(sizes..., value[, options]) or full({sizes}, value[, options]): the last number is the value.
int lmkit_full(lua_State* L) {
  int value_at = 1;
  Sizes sizes;
  if (lua_type(L, 1) == LUA_TTABLE) {
    sizes = entry_detail::read_rest<std::int64_t>(L, value_at);
  } else {
    while (lua_type(L, value_at + 1) == LUA_TNUMBER || lua_type(L, value_at + 1) == LUA_TBOOLEAN) ++value_at;
    // full(2, 2, nil): a nil where the fill value would be (its variable unset) must not make the
    // last size the value.
    if (lua_gettop(L) > value_at && lua_isnil(L, value_at + 1)) {
      throw ArgError(value_at + 1, "fill value (number or boolean) expected after the sizes, got nil");
    }
    for (int i = 1; i < value_at; ++i) sizes.values.push_back(entry_detail::read<std::int64_t>(L, i, {i, ""}));
  }
  if (lua_type(L, value_at) != LUA_TNUMBER && lua_type(L, value_at) != LUA_TBOOLEAN) {
    type_error(L, value_at, "fill value (number or boolean)");
  }
  const auto value = entry_detail::read<torch::Scalar>(L, value_at, {value_at, ""});
  push_tensor(L, filled(sizes, value, read_spec(L, value_at + 1)));
  return 1;
}

// Runs fn(...) with gradient recording off; returns fn's results. The guard is released before
// any error is re-raised (no C++ object may live across lua_error).
int lmkit_no_grad(lua_State* L) {
  check_type(L, 1, LUA_TFUNCTION, "function");
  const int base = lua_gettop(L);
  int status;
  {
    torch::NoGradGuard guard;
    status = lua_pcall(L, base - 1, LUA_MULTRET, 0);
  }
  if (status != LUA_OK) throw PendingLuaError();
  return lua_gettop(L);
}

int lmkit_seed(lua_State* L) {
  const auto seed = check_integer(L, 1);
  seed_torch(static_cast<std::uint64_t>(seed));
  // Lua's own generator too, so recipes that draw with math.random are reproducible.
  if (push_embedded_function(L, "lmkit.random_state", "seed")) {
    lua_pushinteger(L, seed);
    if (lua_pcall(L, 1, 0, 0) != LUA_OK) throw PendingLuaError();
  }
  lua_settop(L, 0);
  return 0;
}

VersionTable lua_version() { return version_table(LUA_RELEASE); }

int lmkit_is_tensor(lua_State* L) {
  lua_pushboolean(L, test_tensor(L, 1) != nullptr);
  return 1;
}

// lmkit.doc(value) -> name, doc | nil: the registry behind help().
int lmkit_doc(lua_State* L) {
  if (lua_isnone(L, 1)) throw ArgError(1, "value expected");
  if (lua_type(L, 1) == LUA_TSTRING) {
    if (lua_getfield(L, LUA_REGISTRYINDEX, "lmkit.docs_by_name") != LUA_TTABLE) return 0;
    lua_pushvalue(L, 1);
    if (lua_rawget(L, -2) == LUA_TNIL) return 0;
    lua_replace(L, 1);
  }
  if (lua_getfield(L, LUA_REGISTRYINDEX, "lmkit.docs") != LUA_TTABLE) return 0;
  lua_pushvalue(L, 1);
  if (lua_rawget(L, -2) != LUA_TTABLE) return 0;
  lua_getfield(L, -1, "name");
  lua_getfield(L, -2, "doc");
  return 2;
}

int lmkit_document(lua_State* L) {
  if (lua_isnoneornil(L, 1)) throw ArgError(1, "value to document expected");
  const auto name = check_string(L, 2);
  const auto doc = check_string(L, 3);
  register_doc(L, 1, name, doc);
  lua_settop(L, 1);
  return 1;
}

const Function kFunctions[] = {
    {"tensor", lmkit_tensor, "lmkit.tensor(data[, {dtype=, device=, requires_grad=}]) -> Tensor\nFrom nested tables of numbers or booleans (or a copy of a Tensor). dtype is inferred: booleans → bool, integers → int64, else float32."},
    entry<&zeros_of>("lmkit", "zeros", "sizes", "Zeros, e.g. lmkit.zeros(2, 3) or lmkit.zeros({2, 3}, {dtype=\"float64\"})."),
    entry<&ones_of>("lmkit", "ones", "sizes", "Ones."),
    entry<&uniform_draws>("lmkit", "rand", "sizes", "U(0, 1) draws from Torch's generator (see lmkit.seed)."),
    entry<&normal_draws>("lmkit", "randn", "sizes", "N(0, 1) draws from Torch's generator (see lmkit.seed)."),
    {"full", lmkit_full, "lmkit.full(sizes..., value[, options]) -> Tensor\nEvery element set to value."},
    entry<&arange_of>("lmkit", "arange", "bounds", "Values start, start+step, ... below stop for bounds (stop) or (start, stop[, step]), half-open as in Torch: arange(1, 4) = {1, 2, 3}; int64 when every bound is an integer."),
    entry<&evenly_spaced>("lmkit", "linspace", "start, stop, steps", "`steps` evenly spaced values from start to stop inclusive."),
    entry<&identity_matrix>("lmkit", "eye", "sizes", "Identity matrix n×m for sizes (n) or (n, m)."),
    entry<&concatenated>("lmkit", "cat", "tensors, dim", "Concatenates along an existing dimension (default 1)."),
    entry<&stacked>("lmkit", "stack", "tensors, dim", "Stacks along a new dimension (default 1)."),
    entry<&selected_where>("lmkit", "where", "condition, a, b", "a where condition is true, else b (tensors or numbers, broadcasting)."),
    entry<static_cast<torch::Tensor (*)(const torch::Tensor&, const torch::Tensor&)>(&torch::matmul)>("lmkit", "matmul", "a, b", "Matrix product with broadcasting."),
    {"error_report", lmkit_error_report,
     "lmkit.error_report(e[, level]) -> error\nAn error as `lmkit run` shows it, for an xpcall message handler: the message "
     "alone for a user's mistake named by an lmkit function, a message raised at level 0, or after Ctrl-C; otherwise the "
     "message with the traceback from where it was raised, lmkit's own Lua frames left out. level: 1 (default) when it is "
     "the handler itself, 2 from a Lua handler that calls it. Raising the result again (error(r, 0)) shows it unchanged."},
    {"no_grad", lmkit_no_grad, "lmkit.no_grad(fn, ...) -> results of fn\nCalls fn(...) without recording operations for autograd (e.g. for parameter updates)."},
    entry<&config::json_text>("lmkit", "json_encode", "value, pretty", "JSON text of a Lua value (tables of numbers, strings, booleans; arrays become lists); pretty: indented."),
    entry<&config::unknown_option_text>("lmkit", "unknown_option", "owner, key, known", "The message for an option `key` that `owner` does not know: the closest of `known` named (lmkit.check_options raises it)."),
    entry<&output_columns>("lmkit", "terminal_columns", "", "The width of the terminal standard output goes to ($COLUMNS when it does not say; 0 for a file or a pipe: no width to fit)."),
    entry<&wrap_text>("lmkit", "wrap_text", "text, width, hang", "Each line of text longer than width broken at spaces, continuation lines indented as the line is plus hang columns (width 0: unchanged)."),
    entry<&config::json_value>("lmkit", "json_decode", "text", "The Lua value of a JSON text (objects become tables, null becomes nil)."),
    entry<&read_tensor_file>("lmkit", "read_tensors", "path",
        "The tensors of a safetensors, NumPy .npy/.npz or torch.save (zip or legacy) file, name → Tensor on the CPU; large files are "
        "memory-mapped and only the entries read are touched. See docs/analysis.md (Your own model)."),
    entry<&tensor_file_contents>("lmkit", "list_tensors", "path", "The entries of a tensor file as its header describes them (no data is read)."),
    entry<&write_tensor_file>("lmkit", "write_tensors", "path, tensors",
        "Writes a table name → Tensor as safetensors, .npz, .npy (one tensor) or a torch.save file (torch.load reads it), atomically."),
    entry<&write_file_atomically>("lmkit", "write_file", "path, text", "Writes text to path atomically (temporary file, fsync, rename): readers see the old file or the new one, never a part."),
    entry<&steady_seconds>("lmkit", "clock", "", "Wall-clock seconds from a steady clock, for timing (differences only; os.clock counts CPU time of all threads)."),
    {"seed", lmkit_seed, "lmkit.seed(n)\nSeeds Torch's CPU and CUDA generators and Lua's math.random."},
    entry<&default_device_name>("lmkit", "device", "", "\"cuda\" when a CUDA device is usable, else \"cpu\"."),
    entry<&ops::device_memory>("lmkit", "device_memory", "device", "Torch's CUDA allocator on \"cuda\" or \"cuda:N\": bytes in live tensors now, their peak since the start or lmkit.reset_peak_device_memory, and bytes held from the driver (with its cache)."),
    entry<&ops::reset_peak_device_memory>("lmkit", "reset_peak_device_memory", "device", "Starts a new peak of lmkit.device_memory at the current allocation."),
    entry<&tensor_memory_status>("lmkit", "tensor_memory", "", "What lmkit's tensors hold in host memory (counted by lmkit's allocator under Torch's), the process's resident memory, and the full collections Lua's collector ran because tensor bytes grew (docs/lua-api.md, \"Memory\"). Bytes."),
    entry<&reset_peak_tensor_memory>("lmkit", "reset_peak_tensor_memory", "", "Starts a new peak of lmkit.tensor_memory().peak_host at the current bytes."),
    entry<&set_deterministic>("lmkit", "set_deterministic", "on", "Deterministic CUDA kernels (Torch's, cuDNN's), for bit-identical reruns on a GPU: call it first, before any CUDA work. cuBLAS needs CUBLAS_WORKSPACE_CONFIG from the process's start: run with LMKIT_DETERMINISTIC=1, which sets both (a warning says so when it is missing). An op without a deterministic kernel then raises an error naming it (docs/training.md, Reproducibility)."),
    entry<&deterministic>("lmkit", "deterministic", "", "Whether deterministic kernels are on (lmkit.set_deterministic, or LMKIT_DETERMINISTIC=1 at the start)."),
    entry<&use_threads>("lmkit", "set_threads", "n", "Gives lmkit n CPU cores (1..1024): OpenBLAS's n threads run the matrix products and Torch's intra-op pool keeps 1 thread, since both pools at n oversubscribe the cores (measured: docs/benchmarks.md, \"Threads\"). torch= and blas= set a pool's count explicitly."),
    entry<&thread_counts>("lmkit", "get_threads", "", "Threads Torch's CPU kernels use, and OpenBLAS's (0 when Torch's BLAS is not OpenBLAS)."),
    entry<&lua_version>("lmkit", "version", "", "What this build is made of (git: the source revision of a development build, \"\" otherwise)."),
    {"is_tensor", lmkit_is_tensor, "lmkit.is_tensor(value) -> boolean\nTrue for an lmkit.Tensor."},
    {"document", lmkit_document, "lmkit.document(value, name, doc) -> value\nAttaches documentation to a function or table of yours, so help() shows it: the doc's first line is the signature with return values."},
    {"doc", lmkit_doc, "lmkit.doc(value | name) -> name, doc\nThe documentation of an lmkit function or class (nil if it has none); help() prints it."},
};

}  // namespace

void open_lmkit_functions(lua_State* L, int module_index) {
  set_functions(L, module_index, "lmkit", kFunctions);
}

}  // namespace lmkit::lua
