#include "repl/script_runner.h"

#include <csignal>
#include <cstdio>
#include <iostream>
#include <string>

#include "bindings/lua_call.h"
#include "bindings/lua_config.h"
#include "bindings/lua_module.h"
#include "repl/interrupt.h"
#include "repl/lua_state_handle.h"
#include "repl/package_path.h"
#include "runtime/core/interruption.h"
#include "runtime/core/preemption.h"

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

}  // namespace

// Installs strict globals; returns false with the error on the stack.
bool make_globals_strict(lua_State* L) {
  lua_getglobal(L, "require");
  lua_pushliteral(L, "lmkit.strict");
  if (lua_pcall(L, 1, 1, 0) != LUA_OK) return false;
  lua_pushglobaltable(L);
  return lua_pcall(L, 1, 0, 0) == LUA_OK;
}

int run_script(const ScriptOptions& options) {
  LuaStateHandle state(lua::new_lmkit_state());
  lua_State* L = state.get();
  lua::set_cli_settings(L, options.settings);
  set_arg_table(L, options);
  set_package_path(L, options.path);
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
    status = lua::call_with_traceback(L, static_cast<int>(options.args.size()), 1);
    // A script that returns a recipe (lmkit.recipe.define{...}) has it run: cells, then report.
    if (status == LUA_OK) {
      lua_getglobal(L, "require");
      lua_pushliteral(L, "lmkit.recipe");
      status = lua::call_with_traceback(L, 1, 1);
      if (status == LUA_OK) {
        lua_getfield(L, -1, "run_returned");
        lua_pushvalue(L, -3);
        status = lua::call_with_traceback(L, 1, 0);
      }
    }
  }
  std::fflush(stdout);
  if (status == LUA_OK && !options.settings.empty() && !lua::cli_settings_were_read(L)) {
    std::string given;
    for (const auto& s : options.settings) given += (given.empty() ? "" : ", ") + s.origin();
    std::cerr << "lmkit: warning: " << given << " had no effect: " << options.path
              << " never read its settings (lmkit.configure{defaults...} or lmkit.settings)\n";
  }
  if (status != LUA_OK) {
    std::cerr << "lmkit: " << lua::describe_value(L, -1) << "\n";
    // Ctrl-C: the shell's convention (128 + SIGINT), so that a job script does not requeue it.
    if (interrupted_by_user()) return 128 + SIGINT;
    // A preempted training run saved its state: tell the batch system to requeue, not to fail.
    return lmkit::was_preempted() ? lmkit::kPreemptedExitStatus : 1;
  }
  return 0;
}

int call_lmkit_function(const char* module, const char* function, const nlohmann::json& options,
                        const std::vector<config::Setting>& settings, const std::string& script,
                        nlohmann::json* result) {
  LuaStateHandle state(lua::new_lmkit_state());
  lua_State* L = state.get();
  lua::set_cli_settings(L, settings);
  set_package_path(L, script);
  if (!make_globals_strict(L)) {
    std::cerr << "lmkit: " << lua_tostring(L, -1) << "\n";
    return 1;
  }
  int status;
  {
    InterruptGuard guard(L);
    lua_getglobal(L, "require");
    lua_pushstring(L, module);
    status = lua::call_with_traceback(L, 1, 1);
    if (status == LUA_OK) {
      lua_getfield(L, -1, function);
      lua::push_json(L, options);
      status = lua::call_with_traceback(L, 1, 1);
    }
  }
  std::fflush(stdout);
  if (status != LUA_OK) {
    std::cerr << "lmkit: " << lua::describe_value(L, -1) << "\n";
    return interrupted_by_user() ? 128 + SIGINT : 1;
  }
  if (result != nullptr) {
    *result = lua::to_json(L, -1, std::string(module) + "." + function + "'s result");
    return 0;
  }
  return lua_isinteger(L, -1) ? static_cast<int>(lua_tointeger(L, -1)) : 0;
}

}  // namespace lmkit::repl
