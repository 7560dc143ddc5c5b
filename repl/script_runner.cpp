#include "repl/script_runner.h"

#include <cstdio>
#include <iostream>

#include "bindings/lua_call.h"
#include "bindings/lua_config.h"
#include "bindings/lua_module.h"
#include "repl/interrupt.h"
#include "repl/lua_state_handle.h"
#include "runtime/training/preemption.h"

namespace lmkit::repl {
namespace {

void set_arg_table(lua_State* L, const ScriptOptions& options) {
  lua_createtable(L, static_cast<int>(options.args.size()), 1);
  lua_pushstring(L, options.path.c_str());
  lua_rawseti(L, -2, 0);
  lua_Integer i = 0;
  for (const auto& a : options.args) {
    lua_pushstring(L, a.c_str());
    lua_rawseti(L, -2, ++i);
  }
  lua_setglobal(L, "arg");
}

// Installs strict globals; returns false with the error on the stack.
bool make_globals_strict(lua_State* L) {
  lua_getglobal(L, "require");
  lua_pushliteral(L, "lmkit.strict");
  if (lua_pcall(L, 1, 1, 0) != LUA_OK) return false;
  lua_pushglobaltable(L);
  return lua_pcall(L, 1, 0, 0) == LUA_OK;
}

}  // namespace

int run_script(const ScriptOptions& options) {
  LuaStateHandle state(lua::new_lmkit_state());
  lua_State* L = state.get();
  lua::set_cli_settings(L, options.settings);
  set_arg_table(L, options);
  if (options.strict_globals && !make_globals_strict(L)) {
    std::cerr << "lmkit: " << lua_tostring(L, -1) << "\n";
    return 1;
  }
  if (luaL_loadfile(L, options.path.c_str()) != LUA_OK) {
    std::cerr << "lmkit: " << lua_tostring(L, -1) << "\n";
    return 1;
  }
  for (const auto& a : options.args) lua_pushstring(L, a.c_str());
  int status;
  {
    InterruptGuard guard(L);
    status = lua::call_with_traceback(L, static_cast<int>(options.args.size()), 0);
  }
  std::fflush(stdout);
  if (status != LUA_OK) {
    const char* message = lua_tostring(L, -1);
    std::cerr << "lmkit: " << (message ? message : "(error object is not a string)") << "\n";
    // A preempted training run saved its state: tell the batch system to requeue, not to fail.
    return training::was_preempted() ? training::kPreemptedExitStatus : 1;
  }
  return 0;
}

}  // namespace lmkit::repl
