// lmkit.heads: head specifications for lmkit.model{head = ...}, and the heads written in Lua.
//
// lmkit.heads.gss{c = 0, k = 2} returns a spec table {kind = "gss", c = 0, k = 2} (metatable
// lmkit.HeadSpec): heads need the model's sizes, so lmkit.model builds them. pointwise(fn) and
// custom{...} specs carry Lua functions; their heads call back into Lua (lua_pcall) through
// registry references owned by RAII objects, and a Lua error becomes a C++ exception carrying
// the Lua message (re-raised as a Lua error at the binding boundary).
#pragma once
#include <lua.hpp>

#include <nlohmann/json.hpp>

#include "runtime/heads/head.h"

namespace lmkit::lua {

constexpr const char* kHeadSpecMetatable = "lmkit.HeadSpec";

// Adds lmkit.heads to the module table at module_index.
void open_heads(lua_State* L, int module_index);

// The head for the spec table at `position` (argument `argument` of the calling binding, for error
// messages), for a model with encoder output width in_dim and embedding width latent_dim.
// `config` receives the head's JSON config ({"kind": "pointwise"} for heads defined in Lua).
Head head_from_spec(lua_State* L, int position, int64_t in_dim, int64_t latent_dim, nlohmann::json& config);

// Lua callbacks made while a binding runs use that binding's thread (coroutine-safe); set by a
// scope object around model calls.
class LuaCallScope {
 public:
  explicit LuaCallScope(lua_State* L);
  ~LuaCallScope();
  LuaCallScope(const LuaCallScope&) = delete;
  LuaCallScope& operator=(const LuaCallScope&) = delete;

 private:
  lua_State* previous_;
};

}  // namespace lmkit::lua
