// The REPL's evaluation, apart from terminal I/O (so it is testable): lines accumulate until they
// form a complete chunk (an "<eof>" syntax error means "needs more", as in lua.c); each chunk is
// tried first as an expression (`return <chunk>`) so that values are echoed; the first value is
// kept in the global `_`.
#pragma once
#include <lua.hpp>

#include <string>

namespace lmkit::repl {

class ReplEvaluator {
 public:
  enum class Status { Complete, NeedsMore };
  struct Outcome {
    Status status = Status::Complete;
    bool failed = false;
    std::string output;  // the echoed values, or the error message with its traceback
    std::string chunk;   // the complete chunk, for the history
  };

  explicit ReplEvaluator(lua_State* L) : L_(L) {}

  Outcome feed(const std::string& line);
  // Abandons a partly typed chunk (Ctrl-C at a continuation prompt).
  void reset() { buffer_.clear(); }
  bool pending() const { return !buffer_.empty(); }

 private:
  // Compiles buffer_ (as an expression first); LUA_OK leaves the function on the stack.
  int compile(bool& incomplete);
  Outcome execute();

  lua_State* L_;
  std::string buffer_;
};

}  // namespace lmkit::repl
