// `lmkit run FILE.lua [--set key=value ...] [-- args]`: one recipe in a fresh Lua state.
#pragma once
#include <string>
#include <vector>

#include <lua.hpp>
#include <nlohmann/json.hpp>

#include "runtime/config/cli_settings.h"

namespace lmkit::repl {

struct ScriptOptions {
  std::string path;
  std::vector<config::Setting> settings;  // reach the script as lmkit.settings / lmkit.configure
  std::vector<std::string> args;          // the script's `arg` (arg[0] is the path) and `...`
  bool strict_globals = true;
};

// Runs the script; errors go to stderr with a traceback. Returns the process exit status:
// 0 on success, 1 when the script failed (or could not be loaded).
int run_script(const ScriptOptions& options);

// Shared with the batch commands, which load recipes the same way: strict globals (false with
// the error on the stack). package.path: repl/package_path.h.
bool make_globals_strict(lua_State* L);

// Calls require(module)[function](options) in a fresh lmkit state with `settings` as the command
// line's --set values; the integer it returns is the exit status (0 when it returns none), 1 when
// it raised (the error goes to stderr). `script` (a recipe) puts its folder on package.path, as
// `lmkit run` does. The batch and catalog commands are such calls. With `result`, the function's
// value is returned there (as JSON) instead of read as an exit status.
int call_lmkit_function(const char* module, const char* function, const nlohmann::json& options,
                        const std::vector<config::Setting>& settings, const std::string& script,
                        nlohmann::json* result = nullptr);

}  // namespace lmkit::repl
