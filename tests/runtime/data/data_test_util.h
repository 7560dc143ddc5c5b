// Helpers for the data tests: a temporary folder removed afterwards, files written into it, and
// the real corpora found through LMKIT_TEST_DATA (tests skip cleanly without them).
#pragma once
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>

namespace lmkit::data::testing {

class TempDir {
 public:
  TempDir() {
    std::string pattern = (std::filesystem::temp_directory_path() / "lmkit-data-test-XXXXXX").string();
    path_ = ::mkdtemp(pattern.data());
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::permissions(path_, std::filesystem::perms::owner_all, std::filesystem::perm_options::add, ec);
    std::filesystem::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::filesystem::path& path() const { return path_; }
  std::filesystem::path write(const std::string& name, const std::string& bytes) const {
    const auto file = path_ / name;
    std::filesystem::create_directories(file.parent_path());
    std::ofstream(file, std::ios::binary) << bytes;
    return file;
  }

 private:
  std::filesystem::path path_;
};

// $LMKIT_TEST_DATA/<name> when it holds valid.txt and test.txt.
inline std::optional<std::filesystem::path> test_corpus(const std::string& name) {
  const char* root = std::getenv("LMKIT_TEST_DATA");
  if (root == nullptr || *root == '\0') return std::nullopt;
  const auto dir = std::filesystem::path(root) / name;
  std::error_code ec;
  if (!std::filesystem::is_regular_file(dir / "valid.txt", ec) || !std::filesystem::is_regular_file(dir / "test.txt", ec)) {
    return std::nullopt;
  }
  return dir;
}

}  // namespace lmkit::data::testing
