// luaopen_lmkit: the entry point shared by the `lmkit` executable and the `require "lmkit"` C module.
#include <cstdio>
#include <cstring>
#include <stdexcept>

#include "bindings/embedded_lua.h"
#include "bindings/lua_call.h"
#include "bindings/lua_collector.h"
#include "bindings/lua_config.h"
#include "bindings/lua_analysis.h"
#include "bindings/lua_data.h"
#include "bindings/lua_fs.h"
#include "bindings/lua_heads.h"
#include "bindings/lua_model.h"
#include "bindings/lua_module.h"
#include "bindings/lua_process.h"
#include "bindings/lua_recipe_folder.h"
#include "bindings/lua_stats.h"
#include "bindings/lua_tensor.h"
#include "bindings/lua_train.h"
#include "runtime/core/determinism.h"
#include "runtime/core/host_memory.h"
#include "runtime/core/warning.h"

namespace lmkit::lua {
namespace {

// package.preload[name] = loader for each embedded Lua module.
void preload_embedded(lua_State* L) {
  luaL_getsubtable(L, LUA_REGISTRYINDEX, LUA_PRELOAD_TABLE);
  for (const auto& chunk : embedded_chunks()) {
    if (luaL_loadbuffer(L, chunk.source, std::strlen(chunk.source), chunk.chunkname) != LUA_OK) {
      lua_error(L);  // a broken embedded file is a build bug; no C++ objects live here
    }
    lua_setfield(L, -2, chunk.module);
  }
  lua_pop(L, 1);
}

int open_module(lua_State* L) {
  keep_freed_memory_in_process();
  // Under another Lua (require "lmkit"), this is the process's first lmkit code; in the lmkit
  // executable main() has done both already (the second call changes nothing).
  route_torch_warnings();
  char failure[512] = "";
  try {
    deterministic_from_environment();
  } catch (const std::exception& e) {
    std::snprintf(failure, sizeof failure, "%s", e.what());
  }
  if (failure[0] != '\0') return luaL_error(L, "%s", failure);  // no C++ object lives past here
  open_collector(L);
  preload_embedded(L);
  lua_newtable(L);
  const int module = lua_gettop(L);
  open_tensor(L);
  luaL_getmetatable(L, kTensorMetatable);
  lua_setfield(L, module, "Tensor");
  open_lmkit_functions(L, module);
  open_config(L, module);
  open_stats(L, module);
  open_data(L, module);
  open_heads(L, module);
  open_model(L, module);
  open_analysis(L, module);  // its functions take models and vocabularies
  open_train(L, module);
  open_process(L, module);
  open_recipe_folder(L, module);
  open_fs(L, module);
  // Lua-side additions (help, show, ...) extend the table in place.
  lua_getglobal(L, "require");
  lua_pushliteral(L, "lmkit.init");
  lua_call(L, 1, 1);
  lua_pushvalue(L, module);
  lua_call(L, 1, 0);
  lua_settop(L, module);
  return 1;
}

}  // namespace
}  // namespace lmkit::lua

extern "C" int luaopen_lmkit(lua_State* L) { return lmkit::lua::open_module(L); }
