#include "bindings/lua_heads.h"

#include <memory>
#include <string>
#include <tuple>
#include <vector>

#include "bindings/entry_point.h"
#include "bindings/lua_collector.h"
#include "runtime/core/error.h"
#include "runtime/core/number_text.h"
#include "runtime/heads/head_registry.h"
#include "runtime/heads/scripted_heads.h"

namespace lmkit::lua {
namespace {

thread_local lua_State* current_thread = nullptr;

lua_State* main_thread(lua_State* L) {
  lua_rawgeti(L, LUA_REGISTRYINDEX, LUA_RIDX_MAINTHREAD);
  lua_State* main = lua_tothread(L, -1);
  lua_pop(L, 1);
  return main;
}

// A Lua value kept alive in the registry for as long as this object lives.
class LuaRef {
 public:
  LuaRef(lua_State* L, int index) : L_(main_thread(L)) {
    lua_pushvalue(L, index);
    ref_ = luaL_ref(L, LUA_REGISTRYINDEX);
  }
  ~LuaRef() {
    if (ref_ != LUA_NOREF && ref_ != LUA_REFNIL) luaL_unref(L_, LUA_REGISTRYINDEX, ref_);
  }
  LuaRef(const LuaRef&) = delete;
  LuaRef& operator=(const LuaRef&) = delete;
  // The state to call in: the running binding's thread, else the main thread.
  lua_State* state() const { return current_thread ? current_thread : L_; }
  void push(lua_State* L) const { lua_rawgeti(L, LUA_REGISTRYINDEX, ref_); }

 private:
  lua_State* L_;
  int ref_ = LUA_NOREF;
};

class LuaCallbackError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Calls the Lua function `fn` with `args` (an undefined tensor as nil), expecting one tensor back.
torch::Tensor call_for_tensor(const LuaRef& fn, std::initializer_list<torch::Tensor> args, const std::string& what) {
  lua_State* L = fn.state();
  const int base = lua_gettop(L);
  fn.push(L);
  for (const auto& t : args) {
    if (t.defined()) {
      push_tensor(L, t);
    } else {
      lua_pushnil(L);
    }
  }
  if (lua_pcall(L, static_cast<int>(args.size()), 1, 0) != LUA_OK) {
    std::string message = describe_value(L, -1);
    lua_settop(L, base);
    throw LuaCallbackError(message);
  }
  auto* t = test_tensor(L, -1);
  const std::string got = luaL_typename(L, -1);
  torch::Tensor result = t != nullptr ? *t : torch::Tensor();
  lua_settop(L, base);
  // What the call made and did not return — its intermediates, each holding the autograd graph
  // behind it — goes now, not when the collector next finds time (lua_collector.h).
  collect_after_callback(L);
  if (!result.defined()) throw LuaCallbackError(what + " must return a Tensor, got " + got);
  return result;
}

// The Lua function at `index`, kept for as long as the head holds it; none when it is not one
// (`required`: an error naming `what`, e.g. a spec whose function was replaced after it was made).
std::shared_ptr<LuaRef> function_at(lua_State* L, int index, const char* required = nullptr) {
  if (lua_type(L, index) == LUA_TFUNCTION) return std::make_shared<LuaRef>(L, index);
  if (required) throw UsageError(std::string(required) + " must be a function, got " + luaL_typename(L, index));
  return nullptr;
}

// A custom head's spec table at `table` as the runtime's head (scripted_heads.h).
CustomHeadFunctions custom_functions(lua_State* L, int table, std::string name) {
  CustomHeadFunctions functions;
  functions.name = std::move(name);
  const std::string head = "custom head '" + functions.name + "': ";
  get_field_raw(L, table, "forward");
  functions.forward = [fn = function_at(L, -1, "a custom head's forward"), what = head + "forward(h, weight, bias)"](
                          const torch::Tensor& h, const torch::Tensor& w, const torch::Tensor& b) {
    return call_for_tensor(*fn, {h, w, b}, what);
  };
  get_field_raw(L, table, "nll");
  if (auto nll = function_at(L, -1)) {
    functions.nll = [fn = nll, what = head + "nll(h, targets, weight, bias)"](const torch::Tensor& h, const torch::Tensor& y,
                                                                              const torch::Tensor& w, const torch::Tensor& b) {
      return call_for_tensor(*fn, {h, y, w, b}, what);
    };
  }
  if (get_field_raw(L, table, "parameters") == LUA_TTABLE) {
    for (lua_Integer i = 1; i <= static_cast<lua_Integer>(lua_rawlen(L, -1)); ++i) {
      lua_rawgeti(L, -1, i);
      auto* t = test_tensor(L, -1);
      // (The stack is left as it is: the error ends the binding's call, and Lua's unwinding resets it.)
      if (!t) throw UsageError(head + "parameters[" + integer_text(i) + "] is not a Tensor");
      functions.parameters.push_back(*t);
      lua_pop(L, 1);
    }
  }
  if (get_field_raw(L, table, "check") == LUA_TBOOLEAN) functions.check = lua_toboolean(L, -1);
  lua_pop(L, 4);
  return functions;
}

// Pushes a spec table {kind = kind}; its fields are set raw and the HeadSpec metatable last (a script
// can reach that metatable and give it a __newindex).
void push_spec(lua_State* L, const char* kind) {
  lua_createtable(L, 0, 4);
  lua_pushstring(L, kind);
  lua_setfield(L, -2, "kind");
}

// lmkit.heads.<kind>{...} for every registered kind (head_registry.h): each option given is checked
// by the kind's schema (the check make_head makes) and kept in the spec; defaults stay implicit.
int heads_registered(lua_State* L) {
  const std::string name = current_function(L).name;
  const auto& schema = require_head_kind(name).schema();
  const auto given = entry_detail::read_options_table(L, 1, entry_detail::Where{1, ""}, schema).values;
  nlohmann::json spec = nlohmann::json::object();
  for (auto it = given.begin(); it != given.end(); ++it) {
    try {
      spec[it.key()] = schema.check(it.key(), it.value());
    } catch (const ConfigError& e) {
      throw ArgError(1, e.what());
    }
  }
  spec["kind"] = name;
  push_json(L, spec);
  luaL_setmetatable(L, kHeadSpecMetatable);
  return 1;
}

// The functions of lmkit.heads.<kind>, built once per process from the registry (their names and
// doc strings must outlive every Lua state that holds them).
const std::vector<Function>& registered_head_functions() {
  static const std::vector<Function> functions = [] {
    std::vector<Function> list;
    for (const HeadKind* kind : registered_head_kinds()) {
      list.push_back({entry_detail::keep(kind->kind), heads_registered, entry_detail::keep(kind->doc())});
    }
    return list;
  }();
  return functions;
}

int heads_pointwise(lua_State* L) {
  check_type(L, 1, LUA_TFUNCTION, "function");
  push_spec(L, "pointwise");
  lua_pushvalue(L, 1);
  lua_setfield(L, -2, "fn");
  luaL_setmetatable(L, kHeadSpecMetatable);
  return 1;
}

int heads_custom(lua_State* L) {
  check_type(L, 1, LUA_TTABLE, "table");
  // Each field, the Lua type it must have and what it is; forward is the only one required.
  const std::tuple<const char*, int, const char*> fields[] = {
      {"forward", LUA_TFUNCTION, "a function (h, weight, bias) -> log-probabilities"},
      {"nll", LUA_TFUNCTION, "a function"},
      {"parameters", LUA_TTABLE, "a list of Tensors"},
      {"name", LUA_TSTRING, "a string"},
      {"check", LUA_TBOOLEAN, "a boolean (false: do not compare nll with forward on the first batch)"}};
  entry_detail::check_keys(L, 1, entry_detail::Where{1, ""}, {"forward", "nll", "parameters", "name", "check"}, {});
  push_spec(L, "custom");
  for (const auto& [key, type, what] : fields) {
    const int given = get_field_raw(L, 1, key);
    const bool required = std::string(key) == "forward";
    if (given != type && (given != LUA_TNIL || required)) {
      throw ArgError(1, "field '" + std::string(key) + "' must be " + what);
    }
    lua_setfield(L, -2, key);
  }
  luaL_setmetatable(L, kHeadSpecMetatable);
  return 1;
}

const Function kHeadFunctions[] = {
    entry<&head_kinds>("lmkit.heads", "kinds", "", "The head kinds built into lmkit (each also lmkit.heads.<kind>), sorted; the Lua heads pointwise and custom are not among them."),
    entry<&head_info>("lmkit.heads", "info", "kind", "What a built-in head kind declares (defaults as Lua values)."),
    {"pointwise", heads_pointwise, "lmkit.heads.pointwise(fn) -> HeadSpec\nlog_softmax(fn(l)) for a Lua function fn of the logits Tensor [M, N] returning a Tensor of the same shape, composed from lmkit tensor ops (autograd works). Models with it cannot be saved."},
    {"custom", heads_custom, "lmkit.heads.custom{forward=fn, nll=fn, parameters={...}, name=, check=} -> HeadSpec\nA head written in Lua: forward(h [M, d], weight [N, d], bias [N] or nil) returns log-probabilities [M, N]; optional nll(h, targets, weight, bias) returns [M] negative log-likelihoods, compared with forward on the first batch (check = false skips that); parameters (leaf Tensors that require grad) become the head's parameters. See docs/lua-heads.md."},
};

}  // namespace

LuaCallScope::LuaCallScope(lua_State* L) : previous_(current_thread) { current_thread = L; }
LuaCallScope::~LuaCallScope() { current_thread = previous_; }

Head head_from_spec(lua_State* L, int position, int64_t in_dim, int64_t latent_dim, nlohmann::json& config) {
  position = lua_absindex(L, position);
  if (lua_type(L, position) != LUA_TTABLE || get_field_raw(L, position, "kind") != LUA_TSTRING) {
    if (lua_type(L, position) == LUA_TTABLE) lua_pop(L, 1);
    throw UsageError("option 'head' must be a head from lmkit.heads (e.g. lmkit.heads.mos{K=15})");
  }
  const std::string kind = lua_tostring(L, -1);
  lua_pop(L, 1);
  std::shared_ptr<HeadImpl> head;
  if (kind == "pointwise") {
    get_field_raw(L, position, "fn");
    head = std::make_shared<PointwiseHeadImpl>([fn = function_at(L, -1, "a pointwise head's fn")](const torch::Tensor& l) {
      return call_for_tensor(*fn, {l}, "the pointwise head's function");
    });
    lua_pop(L, 1);
  } else if (kind == "custom") {
    std::string name = "custom";
    if (get_field_raw(L, position, "name") == LUA_TSTRING) name = lua_tostring(L, -1);
    lua_pop(L, 1);
    head = std::make_shared<CustomHeadImpl>(custom_functions(L, position, name));
  }
  if (head) {
    config = head->config();
    return Head(head);
  }
  config = to_json(L, position, "head");  // a spec of lmkit.heads.<kind>: its checked options
  return make_head(config, in_dim, latent_dim);
}

void open_heads(lua_State* L, int module_index) {
  luaL_newmetatable(L, kHeadSpecMetatable);
  lua_pushliteral(L, "HeadSpec");
  lua_setfield(L, -2, "__name");
  lua_pop(L, 1);
  lua_newtable(L);
  const auto& registered = registered_head_functions();
  set_functions(L, -1, "lmkit.heads", registered.data(), registered.size(), false);
  set_functions(L, -1, "lmkit.heads", kHeadFunctions);
  lua_setfield(L, module_index, "heads");
}

}  // namespace lmkit::lua
