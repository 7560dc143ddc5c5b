// A fresh folder per test under the system's temporary directory, named by the pid and the test
// (so that parallel runs and reruns never share one), removed when the test ends. (Progress bars
// are off through CTest's environment for the C++ tests: a test never edits its own environment.)
#pragma once
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <string>

#include <gtest/gtest.h>

namespace lmkit::testing {

class TemporaryFolderTest : public ::testing::Test {
 protected:
  // `create`: the folder exists when the test starts (otherwise the test makes it as it needs).
  explicit TemporaryFolderTest(std::string prefix, bool create = false) : prefix_(std::move(prefix)), create_(create) {}
  void SetUp() override {
    // A parameterized test's name holds a '/' ("Case/param"): one folder per test, not a folder in
    // another that outlives it.
    std::string name = ::testing::UnitTest::GetInstance()->current_test_info()->name();
    for (auto& c : name) {
      if (c == '/') c = '_';
    }
    root_ = std::filesystem::temp_directory_path() / (prefix_ + std::to_string(::getpid()) + "_" + name);
    std::filesystem::remove_all(root_);
    if (create_) std::filesystem::create_directories(root_);
  }
  void TearDown() override { std::filesystem::remove_all(root_); }
  std::string dir(const std::string& name) const { return (root_ / name).string(); }

  std::filesystem::path root_;

 private:
  std::string prefix_;
  bool create_;
};

}  // namespace lmkit::testing
