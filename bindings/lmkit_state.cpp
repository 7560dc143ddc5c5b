#include <stdexcept>
#include <string>

#include "bindings/lua_module.h"

namespace lmkit::lua {
namespace {

// Runs inside lua_pcall, so a failure to open lmkit is an error message, not a panic.
int open_everything(lua_State* L) {
  luaL_openlibs(L);
  luaL_requiref(L, "lmkit", luaopen_lmkit, /*global=*/1);
  lua_getfield(L, -1, "help");  // help() is global, as in the REPLs researchers know
  lua_setglobal(L, "help");
  return 0;
}

}  // namespace

lua_State* new_lmkit_state() {
  lua_State* L = luaL_newstate();
  if (!L) throw std::runtime_error("cannot create a Lua state: out of memory");
  lua_pushcfunction(L, open_everything);
  if (lua_pcall(L, 0, 0, 0) != LUA_OK) {
    std::string message = lua_tostring(L, -1) ? lua_tostring(L, -1) : "(no message)";
    lua_close(L);
    throw std::runtime_error("cannot open lmkit: " + message);
  }
  return L;
}

}  // namespace lmkit::lua
