#include "bindings/lua_fs.h"

#include <filesystem>
#include <memory>
#include <string>
#include <system_error>

#include "bindings/lua_call.h"
#include "runtime/core/error.h"
#include "runtime/core/file_lock.h"

namespace lmkit::lua {
namespace {

namespace fs = std::filesystem;

int fs_mkdir(lua_State* L) {
  const std::string path = check_string(L, 1);
  if (path.empty()) throw ArgError(1, "the path is empty");
  std::error_code error;
  fs::create_directories(path, error);
  // create_directories reports no error for an existing folder, but an existing file is one.
  if (error || !fs::is_directory(path)) {
    const std::string why = error ? error.message() : "a file of that name is in the way";
    throw EnvironmentError("cannot create the folder '" + path + "': " + why);
  }
  lua_pushvalue(L, 1);
  return 1;
}

int fs_exists(lua_State* L) {
  std::error_code error;
  lua_pushboolean(L, fs::exists(check_string(L, 1), error));
  return 1;
}

int fs_is_dir(lua_State* L) {
  std::error_code error;
  lua_pushboolean(L, fs::is_directory(check_string(L, 1), error));
  return 1;
}

int fs_with_lock(lua_State* L) {
  const std::string path = check_string(L, 1);
  if (path.empty()) throw ArgError(1, "the path is empty");
  check_type(L, 2, LUA_TFUNCTION, "function");
  const std::string purpose = opt_string(L, 3).value_or("lmkit");
  auto lock = std::make_unique<FileLock>(path, purpose);
  const int base = lua_gettop(L);
  lua_pushvalue(L, 2);
  // No message handler: the function's error value (a string, a table) goes on unchanged.
  const int status = lua_pcall(L, 0, LUA_MULTRET, 0);
  lock.reset();
  if (status != LUA_OK) throw PendingLuaError();
  return lua_gettop(L) - base;
}

const Function kFunctions[] = {
    {"mkdir", fs_mkdir, "lmkit.fs.mkdir(path) -> path\nCreates the folder and its parents (nothing to do when it exists); an error names the path and the reason."},
    {"exists", fs_exists, "lmkit.fs.exists(path) -> boolean\nTrue when something (file, folder, ...) is at path."},
    {"is_dir", fs_is_dir, "lmkit.fs.is_dir(path) -> boolean\nTrue when path is a folder (or a link to one)."},
    {"with_lock", fs_with_lock, "lmkit.fs.with_lock(path, fn[, purpose]) -> fn's results\nCalls fn() holding an exclusive lock on the file path (created if missing), released when fn returns or raises, or when the process ends however it ends. Another holder, in this process or another, makes it an error naming the holder's pid, host, start time and purpose."},
};

}  // namespace

void open_fs(lua_State* L, int module_index) {
  module_index = lua_absindex(L, module_index);
  lua_newtable(L);
  set_functions(L, -1, "lmkit.fs", kFunctions);
  register_doc(L, -1, "lmkit.fs", "lmkit.fs — folders and files for recipes (std::filesystem, no shell).");
  lua_setfield(L, module_index, "fs");
}

}  // namespace lmkit::lua
