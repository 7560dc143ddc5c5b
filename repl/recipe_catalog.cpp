#include "repl/recipe_catalog.h"

#include <algorithm>
#include <filesystem>
#include <system_error>
#include <vector>

#include <nlohmann/json.hpp>

#include "repl/package_path.h"
#include "repl/script_runner.h"
#include "runtime/core/error.h"

namespace lmkit::repl {
namespace {

namespace fs = std::filesystem;

fs::path recipes_dir_or_throw() {
  const auto dir = lmkit_recipes_dir();
  if (!dir) {
    throw EnvironmentError("lmkit's recipes folder was not found (neither <prefix>/share/lmkit/recipes beside this "
                           "executable nor the source tree's recipes/); set LMKIT_RECIPES=DIR");
  }
  return *dir;
}

// The .lua files directly in `dir` (the recipes; presets/ and data/ are below it), sorted.
std::vector<std::string> lua_files(const fs::path& dir) {
  std::vector<std::string> files;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    if (entry.is_regular_file(ec) && entry.path().extension() == ".lua") files.push_back(entry.path().string());
  }
  std::sort(files.begin(), files.end());
  return files;
}

}  // namespace

std::string resolve_recipe(const std::string& name_or_path) {
  std::error_code ec;
  if (fs::is_regular_file(name_or_path, ec)) return name_or_path;
  if (fs::is_directory(name_or_path, ec)) {
    throw EnvironmentError("cannot run " + name_or_path + ": it is a folder, not a file (give the recipe's .lua " +
                           "file, or a recipe's name: `lmkit recipes` lists them)");
  }
  // Something is there that is not a file: named as what it is (reading a FIFO would wait for a
  // writer, a device would read forever), not as missing.
  const auto status = fs::status(name_or_path, ec);
  if (!ec && fs::exists(status)) {
    const char* kind = status.type() == fs::file_type::fifo        ? "a named pipe (FIFO)"
                       : status.type() == fs::file_type::character ? "a character device"
                       : status.type() == fs::file_type::block     ? "a block device"
                       : status.type() == fs::file_type::socket    ? "a socket"
                                                                   : "not a regular file";
    throw EnvironmentError("cannot run " + name_or_path + ": it is " + std::string(kind) +
                           ", not a script file (give a recipe's .lua file, or a recipe's name: `lmkit recipes` lists them)");
  }
  const bool bare = name_or_path.find('/') == std::string::npos && !name_or_path.empty();
  if (bare) {
    if (const auto dir = lmkit_recipes_dir()) {
      const std::string file = name_or_path.size() > 4 && name_or_path.compare(name_or_path.size() - 4, 4, ".lua") == 0
                                   ? name_or_path
                                   : name_or_path + ".lua";
      const auto candidate = *dir / file;
      if (fs::is_regular_file(candidate, ec)) return candidate.string();
      throw EnvironmentError("no file '" + name_or_path + "' here and no recipe '" + name_or_path + "' in " +
                             dir->string() + " (`lmkit recipes` lists them)");
    }
  }
  throw EnvironmentError("cannot open " + name_or_path + ": no such file" +
                         (bare ? " (and lmkit's recipes folder was not found)" : ""));
}

int list_recipes() {
  const auto dir = recipes_dir_or_throw();
  const auto files = lua_files(dir);
  return call_lmkit_function("lmkit.recipe", "print_catalog", nlohmann::json{{"dir", dir.string()}, {"files", files}}, {},
                             files.empty() ? "" : files.front());
}

int show_recipe_help(const std::string& name_or_path) {
  const auto file = resolve_recipe(name_or_path);
  return call_lmkit_function("lmkit.recipe", "print_help", nlohmann::json{{"file", file}}, {}, file);
}

}  // namespace lmkit::repl
