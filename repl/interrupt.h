// Ctrl-C while Lua runs: the first SIGINT stops the running chunk at its next Lua instruction with
// the error "interrupted!" (as lua.c does); a second one, before that happens, ends the process.
#pragma once
#include <lua.hpp>

namespace lmkit::repl {

class InterruptGuard {
 public:
  explicit InterruptGuard(lua_State* L);
  ~InterruptGuard();
  InterruptGuard(const InterruptGuard&) = delete;
  InterruptGuard& operator=(const InterruptGuard&) = delete;
};

}  // namespace lmkit::repl
