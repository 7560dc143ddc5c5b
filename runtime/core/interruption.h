// Ctrl-C during long C++ work. lua.c's way (a Lua hook that raises "interrupted!") cannot reach
// code that runs for minutes inside one C++ call (lmkit.train, lmkit.evaluate), and resetting
// SIGINT to its default made the second Ctrl-C kill the whole session. Instead, long C++ work opens
// an InterruptibleScope and polls at its safe points (a training step boundary, an evaluation
// window); the SIGINT handler of the REPL and of `lmkit run` asks it to stop there. The trainer
// then saves its resume state exactly as for SIGTERM (preemption.h); other work throws Interrupted.
#pragma once
#include <stdexcept>

namespace lmkit {

class Interrupted : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Marks C++ work that polls for interruption while it lives (nests: the outermost scope owns the
// request, so an evaluation inside training leaves it to the trainer).
class InterruptibleScope {
 public:
  InterruptibleScope();
  ~InterruptibleScope();
  InterruptibleScope(const InterruptibleScope&) = delete;
  InterruptibleScope& operator=(const InterruptibleScope&) = delete;
  bool outermost() const { return outermost_; }
  // Throws Interrupted("<what> interrupted (Ctrl-C)") when this is the outermost scope and a stop
  // was requested (the request is consumed).
  void poll(const char* what) const;

 private:
  bool outermost_;
};

// For a SIGINT handler (async-signal-safe): when some scope polls, records the request and
// returns true; otherwise returns false and the caller handles the signal its own way.
bool request_interruption() noexcept;
// Whether a stop is pending; taking it clears it.
bool interruption_requested();
bool take_interruption();
// Whether any request was accepted since the process started (for exit statuses), or a Ctrl-C
// stopped Lua code (note_lua_interruption): either way the work in progress did not fail, it was
// stopped (a recipe's cell is then not marked failed).
bool was_interrupted();
// For the SIGINT handler that stops Lua code where no C++ work polls (async-signal-safe).
void note_lua_interruption() noexcept;
// A new piece of work starts (a REPL line, a script): what an earlier Ctrl-C stopped is forgotten, so
// that a later error is not taken for an interruption.
void forget_interruptions() noexcept;

}  // namespace lmkit
