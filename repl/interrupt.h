// Ctrl-C while Lua runs (the REPL, `lmkit run`, `lmkit batch`):
// - inside long C++ work that polls (training, evaluation, the logP matrix: runtime/core/
//   interruption.h), every SIGINT asks it to stop at its next safe point; training saves its state
//   as for SIGTERM and the error returns to the prompt with the session intact;
// - otherwise the first SIGINT stops the running chunk at its next Lua instruction with the error
//   "interrupted!" (as lua.c does); a second one, before that happens, ends the process (a C call
//   that never returns can still be left). Ctrl-\ (SIGQUIT) always ends the process.
#pragma once
#include <lua.hpp>

namespace lmkit::repl {

// Whether a Ctrl-C stopped anything since the process started, Lua code or C++ work (for the
// exit status: 130, the shell's 128 + SIGINT, wherever it landed).
bool interrupted_by_user();

class InterruptGuard {
 public:
  explicit InterruptGuard(lua_State* L);
  ~InterruptGuard();
  InterruptGuard(const InterruptGuard&) = delete;
  InterruptGuard& operator=(const InterruptGuard&) = delete;
};

}  // namespace lmkit::repl
