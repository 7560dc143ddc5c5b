// `lmkit run FILE.lua [--set key=value ...] [-- args]`: one recipe in a fresh Lua state.
#pragma once
#include <string>
#include <vector>

#include <lua.hpp>

#include "runtime/config/settings.h"

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

}  // namespace lmkit::repl
