#include "bindings/lua_call.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstring>
#include <exception>
#include <new>
#include <vector>

#include "runtime/config/json_text.h"
#include "runtime/config/option_schema.h"
#include "runtime/core/error.h"
#include "runtime/core/exception_text.h"
#include "runtime/core/interruption.h"
#include "runtime/core/number_text.h"
#include "runtime/core/tensor_memory.h"
#include "runtime/core/preemption.h"

namespace lmkit::lua {
namespace {

constexpr const char* kDocsKey = "lmkit.docs";          // registry: function → {name=, doc=}
constexpr const char* kDocsByNameKey = "lmkit.docs_by_name";
// registry: the message of the last error an lmkit function raised for a user's mistake (a wrong
// value, option or file), which a script's failure then shows without a traceback.
constexpr const char* kUserMistakeKey = "lmkit.user_mistake";

// Pushes "file:line: bad argument #N to 'name' (message)" following Lua's own conventions.
void push_argument_error(lua_State* L, const char* name, bool method, const ArgError& e) {
  luaL_where(L, 1);
  int position = e.position;
  if (method) {
    --position;
    if (position == 0) {
      lua_pushfstring(L, "calling '%s' on bad self (%s)", name, e.what());
      lua_concat(L, 2);
      return;
    }
  }
  lua_pushfstring(L, "bad argument #%d to '%s' (%s)", position, name, e.what());
  lua_concat(L, 2);
}

void push_failure(lua_State* L, const char* name, const char* what) {
  // The runtime names its own function ("evaluate: too few tokens"); the binding's qualified name
  // replaces it rather than stacking on it ("lmkit.evaluate: evaluate: ...").
  const char* dot = std::strrchr(name, '.');
  const char* colon = std::strrchr(name, ':');
  const char* short_name = std::max(dot, colon) ? std::max(dot, colon) + 1 : name;
  const std::size_t length = std::strlen(short_name);
  luaL_where(L, 1);
  if (std::strncmp(what, short_name, length) == 0 &&
      ((what[length] == ':' && what[length + 1] == ' ') || (what[length] == ' ' && what[length + 1] == '('))) {
    lua_pushfstring(L, "%s%s", name, what + length);  // "dynamic_evaluate (training stream): ..." keeps its aside
  } else {
    lua_pushfstring(L, "%s: %s", name, what);
  }
  lua_concat(L, 2);
}

// Whether the exception is the user's mistake (lmkit's UsageError, ConfigError, EnvironmentError)
// rather than a bug: its message is all a person needs.
bool is_user_mistake(const std::exception_ptr& error) {
  try {
    std::rethrow_exception(error);
  } catch (const UsageError&) {
    return true;
  } catch (const ConfigError&) {
    return true;
  } catch (const EnvironmentError&) {
    return true;
  } catch (const Interrupted&) {
    return true;  // Ctrl-C: the work was stopped, it did not fail
  } catch (const lmkit::Preempted&) {
    return true;  // a signal stopped the run with its state saved
  } catch (...) {
    return false;
  }
}

// Remembers the message on top of the stack as a user's mistake (see kUserMistakeKey).
void mark_user_mistake(lua_State* L) {
  lua_pushvalue(L, -1);
  lua_setfield(L, LUA_REGISTRYINDEX, kUserMistakeKey);
}

// Runs the binding; on a C++ exception pushes its message and returns -1. All C++ objects of the
// call are gone when this returns, so the caller may lua_error safely.
int invoke(lua_State* L) noexcept {
  const auto* fn = static_cast<const Function*>(lua_touserdata(L, lua_upvalueindex(1)));
  const char* name = lua_tostring(L, lua_upvalueindex(2));
  const bool method = lua_toboolean(L, lua_upvalueindex(3));
  if (tensor_memory_reclaiming() && std::strcmp(fn->name, "__gc") != 0 && std::strcmp(fn->name, "__close") != 0) {
    // A finalizer of the script's, run by the collection that makes room for an allocation Torch is in
    // the middle of (lua_collector.h): Torch's own state and locks are that allocation's, so no other
    // work may start here. Finalizers that only release (lmkit's own) pass.
    push_failure(L, name, "called from a finalizer while lmkit collects garbage to make room for an allocation; "
                          "a __gc function must not compute with lmkit (release things there, compute elsewhere)");
    return -1;
  }
  try {
    return fn->fn(L);
  } catch (const PendingLuaError&) {
    // the error value is already on top of the stack
  } catch (const ArgError& e) {
    push_argument_error(L, name, method, e);
    mark_user_mistake(L);
  } catch (...) {
    const auto error = std::current_exception();
    push_failure(L, name, describe_exception(error).c_str());
    if (is_user_mistake(error)) mark_user_mistake(L);
  }
  return -1;
}

int trampoline(lua_State* L) {
  const int results = invoke(L);
  if (results < 0) return lua_error(L);
  return results;
}

// Whether a message begins with a Lua position ("file.lua:12:", "[string \"...\"]:3:"): raised
// with a level, where a traceback helps; a message without one was raised with level 0, written for
// a person by whoever raised it.
bool has_position(const char* message) {
  const char* p = message;
  if (*p == '[') {
    p = std::strchr(p, ']');
    if (p == nullptr) return false;
    ++p;
  } else {
    while (*p != '\0' && *p != ':' && *p != ' ' && *p != '\n') ++p;
  }
  if (*p++ != ':' || !std::isdigit(static_cast<unsigned char>(*p))) return false;
  while (std::isdigit(static_cast<unsigned char>(*p))) ++p;
  return *p == ':';
}

// Whether a traceback line is a frame of lmkit's own Lua modules (embedded under the chunk names
// "bindings/lua/<module>.lua", so a frame's line starts with them).
bool is_lmkit_frame(const std::string& line) { return line.rfind("\tbindings/lua/", 0) == 0; }

// luaL_traceback's text without lmkit's own frames (and the xpcall through which such a frame called
// the script): what is left is the script's (a recipe's run, report, ...), where its author looks;
// how many frames were left out is said.
std::string without_lmkit_frames(const std::string& traceback) {
  const std::string marker = "\nstack traceback:";
  const auto at = traceback.find(marker);
  if (at == std::string::npos) return traceback;
  std::vector<std::string> lines;
  for (std::size_t start = at + marker.size() + 1; start < traceback.size();) {
    auto end = traceback.find('\n', start);
    if (end == std::string::npos) end = traceback.size();
    lines.push_back(traceback.substr(start, end - start));
    start = end + 1;
  }
  std::string out = traceback.substr(0, at + marker.size());
  std::size_t left_out = 0;
  for (std::size_t i = 0; i < lines.size(); ++i) {
    const bool lmkit_xpcall = lines[i] == "\t[C]: in function 'xpcall'" && i + 1 < lines.size() && is_lmkit_frame(lines[i + 1]);
    if (is_lmkit_frame(lines[i]) || lmkit_xpcall) {
      ++left_out;
    } else if (!lines[i].empty()) {
      out += "\n" + lines[i];
    }
  }
  if (left_out > 0) out += "\n\t(" + integer_text(left_out) + " frame" + (left_out == 1 ? "" : "s") + " of lmkit's own Lua left out)";
  return out;
}

// Pushes how the error at `index` is shown (`lmkit run`, the REPL, a recipe's failed.json): a user's
// mistake that an lmkit function named, a message raised for a person (level 0), or anything after
// Ctrl-C: the message alone. A runtime error or a bug: with the traceback from `level` that finds it,
// lmkit's own frames left out.
void push_error_report(lua_State* L, int index, int level) {
  index = lua_absindex(L, index);
  const char* msg = lua_tostring(L, index);
  if (msg != nullptr && lua_type(L, index) == LUA_TSTRING) {
    lua_getfield(L, LUA_REGISTRYINDEX, kUserMistakeKey);
    const bool named_mistake = lua_rawequal(L, index, -1);
    lua_pop(L, 1);
    // A message that already carries a traceback (a task's failure rethrown) keeps the one it has.
    if (named_mistake || was_interrupted() || !has_position(msg) || std::strstr(msg, "\nstack traceback:") != nullptr) {
      lua_pushvalue(L, index);
      return;
    }
  }
  if (msg == nullptr) {
    // An error object with a __tostring is shown by it (protected: it may raise itself).
    if (luaL_getmetafield(L, index, "__tostring") != LUA_TNIL) {
      lua_pop(L, 1);
      push_string(L, describe_value(L, index));
      return;
    }
    const std::string what = std::string("(error object is a ") + luaL_typename(L, index) + " value)";
    luaL_traceback(L, L, what.c_str(), level);
  } else {
    luaL_traceback(L, L, msg, level);
  }
  push_string(L, without_lmkit_frames(lua_tostring(L, -1)));
  lua_remove(L, -2);
}

int traceback_handler(lua_State* L) {
  push_error_report(L, 1, 1);
  return 1;
}

void push_registry_table(lua_State* L, const char* key, bool weak_keys) {
  if (lua_getfield(L, LUA_REGISTRYINDEX, key) == LUA_TTABLE) return;
  lua_pop(L, 1);
  lua_newtable(L);
  if (weak_keys) {
    lua_newtable(L);
    lua_pushliteral(L, "k");
    lua_setfield(L, -2, "__mode");
    lua_setmetatable(L, -2);
  }
  lua_pushvalue(L, -1);
  lua_setfield(L, LUA_REGISTRYINDEX, key);
}

}  // namespace

[[noreturn]] void type_error(lua_State* L, int position, const char* expected) {
  std::string got = luaL_typename(L, position);
  const int name_type = luaL_getmetafield(L, position, "__name");  // raw: no metamethods run
  if (name_type != LUA_TNIL) {
    if (name_type == LUA_TSTRING) got = lua_tostring(L, -1);
    lua_pop(L, 1);
  }
  throw ArgError(position, std::string(expected) + " expected, got " + got);
}

lua_Integer check_integer(lua_State* L, int position) {
  int is_integer = 0;
  const lua_Integer value = lua_tointegerx(L, position, &is_integer);
  if (!is_integer) {
    if (lua_type(L, position) == LUA_TNUMBER) {
      throw ArgError(position, "number has no integer representation");
    }
    type_error(L, position, "integer");
  }
  return value;
}

std::string check_string(lua_State* L, int position) {
  if (lua_type(L, position) != LUA_TSTRING) type_error(L, position, "string");
  std::size_t length = 0;
  const char* s = lua_tolstring(L, position, &length);
  return std::string(s, length);
}

bool check_boolean(lua_State* L, int position) {
  if (lua_type(L, position) != LUA_TBOOLEAN) type_error(L, position, "boolean");
  return lua_toboolean(L, position);
}

void check_type(lua_State* L, int position, int lua_type_code, const char* expected) {
  if (lua_type(L, position) != lua_type_code) type_error(L, position, expected);
}

void push_string(lua_State* L, const std::string& s) { lua_pushlstring(L, s.data(), s.size()); }

int get_field_raw(lua_State* L, int table, const char* key) {
  table = lua_absindex(L, table);
  lua_pushstring(L, key);
  return lua_rawget(L, table);
}

int index_with_fields(lua_State* L, bool (*field)(lua_State*, const std::string&)) {
  if (lua_type(L, 2) != LUA_TSTRING) throw ArgError(2, "field name (string) expected");
  if (push_method(L, 1, 2)) return 1;
  const std::string key = lua_tostring(L, 2);
  if (field(L, key)) return 1;
  std::string name = "object";
  if (luaL_getmetafield(L, 1, "__name") == LUA_TSTRING) name = lua_tostring(L, -1);
  throw UsageError(name + " has no method or field '" + key + "'");
}

void register_class(lua_State* L, const char* meta, const char* display, const Function* metamethods,
                    std::size_t metamethod_count, const Function* methods, std::size_t method_count,
                    const std::string& doc_name, const char* doc) {
  luaL_newmetatable(L, meta);
  lua_pushstring(L, display);
  lua_setfield(L, -2, "__name");
  set_functions(L, -1, display, metamethods, metamethod_count, false);
  lua_newtable(L);
  set_functions(L, -1, display, methods, method_count, /*methods=*/true);
  lua_setfield(L, -2, "methods");
  register_doc(L, -1, doc_name, doc);
  lua_pop(L, 1);
}

bool push_method(lua_State* L, int object, int key) {
  key = lua_absindex(L, key);
  const int type = luaL_getmetafield(L, object, "methods");  // pushes nothing when absent
  if (type != LUA_TTABLE) {
    if (type != LUA_TNIL) lua_pop(L, 1);
    return false;
  }
  lua_pushvalue(L, key);
  if (lua_rawget(L, -2) != LUA_TNIL) {
    lua_remove(L, -2);
    return true;
  }
  lua_pop(L, 2);
  return false;
}

void enter_nested_level(lua_State* L, int depth, const std::string& what, int slots) {
  if (depth >= config::kMaxNestingDepth) {
    // A path that deep is long: its end says where.
    const std::string shown = what.size() > 80 ? "'..." + what.substr(what.size() - 60) : what;
    throw UsageError(shown + " is nested deeper than " + integer_text(config::kMaxNestingDepth) + " levels");
  }
  if (!lua_checkstack(L, slots)) throw std::bad_alloc();
}

bool is_options_table(lua_State* L, int position) {
  if (lua_type(L, position) != LUA_TTABLE) return false;
  position = lua_absindex(L, position);
  lua_pushnil(L);
  while (lua_next(L, position) != 0) {
    const bool named = lua_type(L, -2) == LUA_TSTRING;
    lua_pop(L, 1);
    if (named) {
      lua_pop(L, 1);
      return true;
    }
  }
  return false;
}

const Function& current_function(lua_State* L) {
  // The trampoline's upvalue 1; a binding runs inside the trampoline's call, so it sees them.
  return *static_cast<const Function*>(lua_touserdata(L, lua_upvalueindex(1)));
}

std::string current_function_name(lua_State* L) { return lua_tostring(L, lua_upvalueindex(2)); }

void set_functions(lua_State* L, int table_index, const char* qualifier,
                   const Function* functions, std::size_t count, bool methods) {
  table_index = lua_absindex(L, table_index);
  for (std::size_t i = 0; i < count; ++i) {
    const Function& f = functions[i];
    const std::string full = std::string(qualifier) + (methods ? ":" : ".") + f.name;
    lua_pushlightuserdata(L, const_cast<Function*>(&f));
    lua_pushstring(L, f.display_name ? f.display_name : full.c_str());
    lua_pushboolean(L, methods);
    lua_pushcclosure(L, trampoline, 3);
    register_doc(L, -1, full, f.doc ? f.doc : "");
    lua_setfield(L, table_index, f.name);
  }
}

void register_doc(lua_State* L, int value_index, const std::string& name, const std::string& doc) {
  value_index = lua_absindex(L, value_index);
  push_registry_table(L, kDocsKey, /*weak_keys=*/true);
  lua_pushvalue(L, value_index);
  lua_createtable(L, 0, 2);
  lua_pushlstring(L, name.data(), name.size());
  lua_setfield(L, -2, "name");
  lua_pushlstring(L, doc.data(), doc.size());
  lua_setfield(L, -2, "doc");
  lua_rawset(L, -3);
  lua_pop(L, 1);
  push_registry_table(L, kDocsByNameKey, /*weak_keys=*/false);
  lua_pushlstring(L, name.data(), name.size());
  lua_pushvalue(L, value_index);
  lua_rawset(L, -3);
  lua_pop(L, 1);
}

namespace {

int tostring_of_argument(lua_State* L) {
  luaL_tolstring(L, 1, nullptr);
  return 1;
}

}  // namespace

std::string describe_value(lua_State* L, int index) {
  index = lua_absindex(L, index);
  if (lua_type(L, index) == LUA_TSTRING) {
    std::size_t length = 0;
    const char* text = lua_tolstring(L, index, &length);
    return std::string(text, length);
  }
  if (!lua_checkstack(L, 3)) return std::string("(a ") + luaL_typename(L, index) + " value)";
  lua_pushcfunction(L, tostring_of_argument);
  lua_pushvalue(L, index);
  if (lua_pcall(L, 1, 1, 0) == LUA_OK) {
    std::size_t length = 0;
    const char* text = lua_tolstring(L, -1, &length);
    std::string result(text, length);
    lua_pop(L, 1);
    return result;
  }
  // The failure's own message may be any value too: only a string is shown.
  std::string reason = lua_type(L, -1) == LUA_TSTRING ? lua_tostring(L, -1) : std::string("a non-string error");
  lua_pop(L, 1);
  return std::string("(a ") + luaL_typename(L, index) + " whose __tostring failed: " + reason + ")";
}

bool push_embedded_function(lua_State* L, const char* module, const char* name) {
  const int top = lua_gettop(L);
  luaL_getsubtable(L, LUA_REGISTRYINDEX, LUA_PRELOAD_TABLE);
  lua_pushstring(L, module);
  const bool found = lua_rawget(L, -2) == LUA_TFUNCTION && lua_pcall(L, 0, 1, 0) == LUA_OK &&
                     lua_type(L, -1) == LUA_TTABLE && (lua_pushstring(L, name), lua_rawget(L, -2) == LUA_TFUNCTION);
  if (found) lua_replace(L, top + 1);
  lua_settop(L, found ? top + 1 : top);
  return found;
}

int lmkit_error_report(lua_State* L) {
  luaL_checkany(L, 1);
  // Level 1: the function that raised, when this is xpcall's message handler itself; a Lua handler
  // that calls it gives 2 (its own frame in between).
  const auto level = luaL_optinteger(L, 2, 1);
  if (level < 1 || level > 100) luaL_argerror(L, 2, "a stack level from 1 to 100");
  push_error_report(L, 1, static_cast<int>(level));
  return 1;
}

int call_with_traceback(lua_State* L, int nargs, int nresults) {
  const int base = lua_gettop(L) - nargs;
  lua_pushcfunction(L, traceback_handler);
  lua_insert(L, base);
  const int status = lua_pcall(L, nargs, nresults, base);
  lua_remove(L, base);
  return status;
}

}  // namespace lmkit::lua
