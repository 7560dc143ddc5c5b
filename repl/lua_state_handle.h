// Owns a lua_State (closes it on scope exit).
#pragma once
#include <lua.hpp>

#include <memory>

namespace lmkit::repl {

struct LuaStateCloser {
  void operator()(lua_State* L) const { lua_close(L); }
};
using LuaStateHandle = std::unique_ptr<lua_State, LuaStateCloser>;

}  // namespace lmkit::repl
