#include "runtime/core/folders.h"

#include <filesystem>
#include <system_error>

#include "runtime/core/error.h"

namespace lmkit {

std::string make_folder(const std::string& path) {
  if (path.empty()) throw UsageError("the path is empty");
  std::error_code error;
  std::filesystem::create_directories(path, error);
  // create_directories reports no error for an existing folder, but an existing file is one.
  if (error || !std::filesystem::is_directory(path)) {
    const std::string why = error ? error.message() : "a file of that name is in the way";
    throw EnvironmentError("cannot create the folder '" + path + "': " + why);
  }
  return path;
}

bool path_exists(const std::string& path) {
  std::error_code error;
  return std::filesystem::exists(path, error);
}

bool is_folder(const std::string& path) {
  std::error_code error;
  return std::filesystem::is_directory(path, error);
}

}  // namespace lmkit
