// Folders and paths as recipes use them (lmkit.fs): std::filesystem without a shell, errors that
// name the path and the reason.
#pragma once
#include <string>

namespace lmkit {

// Creates the folder and its parents (nothing to do when it exists) and returns the path;
// EnvironmentError naming the path and the reason (a file in the way included).
std::string make_folder(const std::string& path);
// Something (file, folder, ...) is at path.
bool path_exists(const std::string& path);
// path is a folder (or a link to one).
bool is_folder(const std::string& path);

}  // namespace lmkit
