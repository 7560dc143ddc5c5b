// A file of lmkit's source tree that a test reads (its fixtures). Not from __FILE__: the compiler
// cache compiles with paths relative to the build folder (cmake/LmkitCompilerCache.cmake), so that
// clones share it, and __FILE__ is then relative too. From LMKIT_SOURCE_DIR, which CTest sets; run
// by hand, from the build folder the test program sits in (build/tests/lmkit_tests), against which
// such a relative __FILE__ was written.
#pragma once
#include <cstdlib>
#include <filesystem>
#include <stdexcept>
#include <string>

namespace lmkit::testing {

inline std::filesystem::path source_tree_path(const std::string& relative) {
  if (const char* root = std::getenv("LMKIT_SOURCE_DIR"); root != nullptr && *root != '\0') {
    return std::filesystem::path(root) / relative;
  }
  const std::filesystem::path here(__FILE__);  // tests/support/source_tree.h, as the compiler saw it
  std::filesystem::path root;
  if (here.is_absolute()) {
    root = here.parent_path().parent_path().parent_path();
  } else {
    std::error_code error;
    const auto program = std::filesystem::read_symlink("/proc/self/exe", error);
    if (error) throw std::runtime_error("set LMKIT_SOURCE_DIR to lmkit's source folder to run this test by hand");
    root = (program.parent_path().parent_path() / here).lexically_normal().parent_path().parent_path().parent_path();
  }
  return root / relative;
}

}  // namespace lmkit::testing
