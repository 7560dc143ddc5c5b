// lmkit.fs: folders and files for recipes (std::filesystem, no shell).
#include "bindings/lua_fs.h"

#include <memory>

#include "bindings/entry_point.h"
#include "runtime/core/file_lock.h"
#include "runtime/core/folders.h"

namespace lmkit::lua {
namespace {

// Calls fn() holding the lock; its results, or its error value unchanged.
int with_lock(lua_State* L) {
  const std::string path = check_string(L, 1);
  if (path.empty()) throw ArgError(1, "the path is empty");
  check_type(L, 2, LUA_TFUNCTION, "function");
  const std::string purpose = lua_isnoneornil(L, 3) ? "lmkit" : check_string(L, 3);
  auto lock = std::make_unique<FileLock>(path, purpose);
  const int base = lua_gettop(L);
  lua_pushvalue(L, 2);
  const int status = lua_pcall(L, 0, LUA_MULTRET, 0);  // no message handler: errors go on as they are
  lock.reset();
  if (status != LUA_OK) throw PendingLuaError();
  return lua_gettop(L) - base;
}

}  // namespace

void open_fs(lua_State* L, int module_index) {
  static const Function functions[] = {
      entry<&make_folder>("lmkit.fs", "mkdir", "path", "Creates the folder and its parents (nothing to do when it exists); an error names the path and the reason."),
      entry<&path_exists>("lmkit.fs", "exists", "path", "True when something (file, folder, ...) is at path."),
      entry<&is_folder>("lmkit.fs", "is_dir", "path", "True when path is a folder (or a link to one)."),
      {"with_lock", with_lock, "lmkit.fs.with_lock(path, fn[, purpose]) -> fn's results\nCalls fn() holding an exclusive lock on path: on the folder itself and its record file path/.lock when path is a folder (deleting the record frees nothing on this machine), else on the file (created if missing); released when fn returns or raises, or when the process ends however it ends. Another holder, in this process or another, makes it an error naming the holder's pid, host, start time and purpose."},
  };
  module_index = lua_absindex(L, module_index);
  lua_newtable(L);
  set_functions(L, -1, "lmkit.fs", functions);
  register_doc(L, -1, "lmkit.fs", "lmkit.fs — folders and files for recipes (std::filesystem, no shell).");
  lua_setfield(L, module_index, "fs");
}

}  // namespace lmkit::lua
