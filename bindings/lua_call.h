// The one exception boundary between Lua and C++.
//
// Every bound function runs through a trampoline that catches C++ exceptions (c10::Error included)
// and raises the Lua error only after the catch block has ended, so lua_error never longjmps over a
// live C++ object. For the same reason the argument checks below throw ArgError instead of calling
// luaL_argerror, and bound code touches Lua values only through raw (metamethod-free) API calls.
#pragma once
#include <lua.hpp>

#include <cstddef>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace lmkit::lua {

// A bad argument at Lua stack position `position` (1-based, self included for methods).
class ArgError : public std::runtime_error {
 public:
  ArgError(int position, const std::string& message)
      : std::runtime_error(message), position(position) {}
  int position;
};

// Thrown by a binding whose Lua call failed: the error value is on top of the stack and is
// re-raised unchanged (with its traceback) once the binding's C++ frames are gone.
class PendingLuaError {};

// "number expected, got string" for the value at `position`.
[[noreturn]] void type_error(lua_State* L, int position, const char* expected);

lua_Integer check_integer(lua_State* L, int position);
std::string check_string(lua_State* L, int position);
bool check_boolean(lua_State* L, int position);
void check_type(lua_State* L, int position, int lua_type, const char* expected);

// For __index of userdata: pushes the method named by the string at `key` from the metatable's
// `methods` table of the value at `object` and returns true; otherwise leaves the stack unchanged.
bool push_method(lua_State* L, int object, int key);

// Pushes field `key` of the table at `table` without metamethods (a raising __index would longjmp
// over the binding's C++ frames) and returns its type.
int get_field_raw(lua_State* L, int table, const char* key);

// Pushes a std::string (embedded zeros kept).
void push_string(lua_State* L, const std::string& s);

// __index for a userdata class: a method from its metatable's `methods`, else a field that
// `field(L, key)` pushes (returning false for an unknown key), else an error naming the class
// and the key.
int index_with_fields(lua_State* L, bool (*field)(lua_State*, const std::string&));

// Recursive walks over Lua values (tables ⇄ JSON, nested lists → tensors) call this at each level
// (depth 0 = the outermost value): deeper than config::kMaxNestingDepth is a UsageError that names
// `what`, and the Lua stack gets room for `slots` more values (a walk that pushes without
// lua_checkstack overruns the stack and corrupts the state).
void enter_nested_level(lua_State* L, int depth, const std::string& what, int slots = 4);

// True when the value at `position` is a table with at least one non-integer key.
bool is_options_table(lua_State* L, int position);

using Binding = int (*)(lua_State* L);

struct Function {
  const char* name;  // Lua-visible name, e.g. "zeros"
  Binding fn;
  const char* doc;   // first line: the signature with return values; then a description
  const char* display_name = nullptr;  // overrides the qualified name in errors ("Tensor indexing")
};

// The Function running now (inside its binding): lets one C function serve several names.
const Function& current_function(lua_State* L);
// Its qualified name, as errors show it ("lmkit.analysis.logp_matrix").
std::string current_function_name(lua_State* L);

// Sets `functions` as fields of the table at `table_index`, each wrapped in the trampoline.
// `qualifier` names their owner in error messages and help ("lmkit" → 'lmkit.zeros', "Tensor" with
// methods=true → 'Tensor:sum', whose argument numbers then exclude self, as Lua's own do).
void set_functions(lua_State* L, int table_index, const char* qualifier,
                   const Function* functions, std::size_t count, bool methods);

template <std::size_t N>
void set_functions(lua_State* L, int table_index, const char* qualifier,
                   const Function (&functions)[N], bool methods = false) {
  set_functions(L, table_index, qualifier, functions, N, methods);
}

// Registers a userdata class: metatable `meta` with __name = display, its metamethods, a `methods`
// table (errors name them "display:method"), and `doc` in help() under `doc_name`.
void register_class(lua_State* L, const char* meta, const char* display, const Function* metamethods,
                    std::size_t metamethod_count, const Function* methods, std::size_t method_count,
                    const std::string& doc_name, const char* doc);

template <std::size_t N, std::size_t M>
void register_class(lua_State* L, const char* meta, const char* display, const Function (&metamethods)[N],
                    const Function (&methods)[M], const std::string& doc_name, const char* doc) {
  register_class(L, meta, display, metamethods, N, methods, M, doc_name, doc);
}

// The documentation registry behind help(): doc strings keyed by the function value, and by name.
void register_doc(lua_State* L, int value_index, const std::string& name, const std::string& doc);

// Calls the function at the top of the stack under a traceback handler, like lua.c's docall.
// Returns the lua_pcall status; on error the message (with traceback) is on the stack.
int call_with_traceback(lua_State* L, int nargs, int nresults);

// lmkit.error_report(e): the error as call_with_traceback shows it, for an xpcall message handler
// that keeps it (a recipe's failed cell): the message alone for a user's mistake, a level-0 message
// or after Ctrl-C; else with the traceback of where it was raised, lmkit's own Lua frames left out.
int lmkit_error_report(lua_State* L);

// Pushes function `name` of the embedded module `module` (bindings/lua/, run from package.preload
// raw: the preload table and the module are reachable from Lua). False, the stack as it was, when
// it cannot.
bool push_embedded_function(lua_State* L, const char* module, const char* name);

// The text of any Lua value, as tostring gives it, without ever raising: a __tostring that raises
// or returns a non-string, or a __name that is not a string, gives "(a table whose __tostring
// failed: ...)" instead of an error — or, outside a protected call, a PANIC that aborts the process.
// For error objects, echoes and messages that may hold any value a script made.
std::string describe_value(lua_State* L, int index);

}  // namespace lmkit::lua
