#include "repl/repl_evaluator.h"

#include <cstring>

#include "bindings/lua_call.h"
#include "repl/interrupt.h"

namespace lmkit::repl {
namespace {

constexpr const char* kChunkName = "=repl";

bool is_incomplete(lua_State* L, int status) {
  if (status != LUA_ERRSYNTAX) return false;
  std::size_t length = 0;
  const char* message = lua_tolstring(L, -1, &length);
  const char* eof_mark = "<eof>";
  const std::size_t mark_length = std::strlen(eof_mark);
  return length >= mark_length && std::strcmp(message + length - mark_length, eof_mark) == 0;
}

// lmkit.show(value) for the echo, falling back to tostring.
std::string show(lua_State* L, int index) {
  index = lua_absindex(L, index);
  lua_getglobal(L, "lmkit");
  if (lua_type(L, -1) == LUA_TTABLE && lua_getfield(L, -1, "show") == LUA_TFUNCTION) {
    lua_pushvalue(L, index);
    if (lua_pcall(L, 1, 1, 0) == LUA_OK && lua_type(L, -1) == LUA_TSTRING) {
      std::string text = lua_tostring(L, -1);
      lua_pop(L, 2);
      return text;
    }
  }
  lua_settop(L, index);
  return lua::describe_value(L, index);  // never raises: no value may abort the REPL
}

}  // namespace

int ReplEvaluator::compile(bool& incomplete) {
  const std::string expression = "return " + buffer_ + ";";
  if (luaL_loadbuffer(L_, expression.data(), expression.size(), kChunkName) == LUA_OK) return LUA_OK;
  lua_pop(L_, 1);
  const int status = luaL_loadbuffer(L_, buffer_.data(), buffer_.size(), kChunkName);
  incomplete = is_incomplete(L_, status);
  return status;
}

ReplEvaluator::Outcome ReplEvaluator::feed(const std::string& line) {
  buffer_ = buffer_.empty() ? line : buffer_ + "\n" + line;
  const int base = lua_gettop(L_);
  bool incomplete = false;
  const int status = compile(incomplete);
  Outcome outcome;
  if (status != LUA_OK) {
    if (incomplete) {
      lua_settop(L_, base);
      outcome.status = Status::NeedsMore;
      return outcome;
    }
    outcome.failed = true;
    outcome.output = lua_tostring(L_, -1);
    outcome.chunk = buffer_;
    buffer_.clear();
    lua_settop(L_, base);
    return outcome;
  }
  outcome = execute();
  lua_settop(L_, base);
  return outcome;
}

ReplEvaluator::Outcome ReplEvaluator::execute() {
  Outcome outcome;
  outcome.chunk = buffer_;
  buffer_.clear();
  const int function_index = lua_gettop(L_);
  int status;
  {
    InterruptGuard guard(L_);
    status = lua::call_with_traceback(L_, 0, LUA_MULTRET);
  }
  if (status != LUA_OK) {
    outcome.failed = true;
    outcome.output = lua::describe_value(L_, -1);
    return outcome;
  }
  const int results = lua_gettop(L_) - function_index + 1;
  for (int i = 0; i < results; ++i) {
    if (i) outcome.output += "\t";
    outcome.output += show(L_, function_index + i);
  }
  if (results > 0) {
    lua_pushvalue(L_, function_index);
    lua_setglobal(L_, "_");
  }
  return outcome;
}

}  // namespace lmkit::repl
