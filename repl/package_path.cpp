#include "repl/package_path.h"

#include <cstdlib>
#include <system_error>

#include "runtime/core/error.h"

namespace lmkit::repl {
namespace {

bool holds_presets(const std::filesystem::path& dir) {
  std::error_code ec;
  return std::filesystem::is_regular_file(dir / "presets" / "awd_lstm.lua", ec);
}

std::filesystem::path executable_dir() {
  std::error_code ec;
  const auto exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  return ec ? std::filesystem::path() : exe.parent_path();
}

}  // namespace

std::optional<std::filesystem::path> lmkit_recipes_dir() {
  if (const char* dir = std::getenv("LMKIT_RECIPES"); dir != nullptr && *dir != '\0') {
    if (!holds_presets(dir)) {
      throw EnvironmentError(std::string("LMKIT_RECIPES=") + dir + " is not an lmkit recipes folder (no presets/awd_lstm.lua "
                             "in it); unset it to use lmkit's own");
    }
    return std::filesystem::path(dir);
  }
  const auto exe = executable_dir();
  for (const auto& candidate : {exe / ".." / "share" / "lmkit" / "recipes", std::filesystem::path(LMKIT_SOURCE_RECIPES_DIR)}) {
    if (!candidate.empty() && holds_presets(candidate)) return candidate.lexically_normal();
  }
  return std::nullopt;
}

void set_package_path(lua_State* L, const std::string& script) {
  std::string front;
  if (!script.empty()) {
    const auto slash = script.find_last_of('/');
    const std::string dir = slash == std::string::npos ? "." : script.substr(0, slash);
    front += dir + "/?.lua;" + dir + "/?/init.lua;";
  }
  if (const auto recipes = lmkit_recipes_dir()) front += recipes->string() + "/?.lua;";
  lua_getglobal(L, "package");
  if (lua_type(L, -1) == LUA_TTABLE) {
    lua_getfield(L, -1, "path");
    const std::string path = front + (lua_isstring(L, -1) ? lua_tostring(L, -1) : "");
    lua_pop(L, 1);
    lua_pushlstring(L, path.data(), path.size());
    lua_setfield(L, -2, "path");
  }
  lua_pop(L, 1);
}

}  // namespace lmkit::repl
