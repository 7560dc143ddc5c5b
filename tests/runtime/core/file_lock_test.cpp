// FileLock: one writer at a time. A folder is held through the folder itself (so deleting or editing
// its record `.lock` frees nothing) and through the record file (the lock a network filesystem
// enforces across nodes, and the one an older lmkit takes); a plain file as before.
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

#include <gtest/gtest.h>

#include "runtime/core/error.h"
#include "runtime/core/file_lock.h"
#include "tests/support/temporary_folder.h"

namespace lmkit {
namespace {

namespace fs = std::filesystem;

class FileLockTest : public testing::TemporaryFolderTest {
 protected:
  FileLockTest() : TemporaryFolderTest("lmkit_file_lock_test_", /*create=*/true) {}

  // The message of the UsageError that taking the lock throws ("" if it was taken).
  static std::string refusal(const std::string& path, const std::string& purpose) {
    try {
      FileLock lock(path, purpose);
    } catch (const UsageError& e) {
      return e.what();
    }
    return "";
  }

  static std::string read_text(const std::string& path) {
    std::ifstream in(path);
    return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  }
};

TEST_F(FileLockTest, AFolderIsHeldByItselfNotByItsRecord) {
  const auto folder = dir("run");
  fs::create_directories(folder);
  const std::string pid = std::to_string(::getpid());
  {
    FileLock first(folder, "first writer");
    EXPECT_NE(read_text(folder + "/.lock").find("\"purpose\":\"first writer\""), std::string::npos);
    const auto message = refusal(folder, "second writer");
    EXPECT_NE(message.find("run' is in use: it is held by pid " + pid + " on host"), std::string::npos) << message;
    EXPECT_NE(message.find(": first writer"), std::string::npos) << message;
    // The record deleted (or replaced) by hand: the folder is still held.
    ASSERT_TRUE(fs::remove(folder + "/.lock"));
    const auto after_delete = refusal(folder, "second writer");
    EXPECT_NE(after_delete.find("run' is in use: it is held by another process (its record '" + folder +
                                "/.lock' is gone)"),
              std::string::npos)
        << after_delete;
    std::ofstream(folder + "/.lock") << "edited by hand\n";
    EXPECT_NE(refusal(folder, "second writer").find("run' is in use"), std::string::npos);
  }
  // Released with its holder: the next one takes it and writes its own record.
  EXPECT_EQ(refusal(folder, "next writer"), "");
  FileLock next(folder, "next writer");
  EXPECT_NE(read_text(folder + "/.lock").find("\"purpose\":\"next writer\""), std::string::npos);
}

TEST_F(FileLockTest, AFolderWhoseRecordFileIsHeldIsRefused) {
  // What a writer on another node of a network filesystem, or an older lmkit, holds: the record
  // file's lock alone.
  const auto folder = dir("shared");
  fs::create_directories(folder);
  {
    FileLock record_only(folder + "/.lock", "older writer");
    const auto message = refusal(folder, "new writer");
    EXPECT_NE(message.find("shared' is in use: its lock '" + folder + "/.lock' is held by pid"), std::string::npos)
        << message;
    EXPECT_NE(message.find(": older writer"), std::string::npos) << message;
  }
  // The refused attempt let go of the folder too: with the record file free, the folder is free.
  EXPECT_EQ(refusal(folder, "new writer"), "");
}

TEST_F(FileLockTest, APlainFileIsLockedAndNamed) {
  const auto file = dir("batch.lock");
  FileLock first(file, "a batch");
  const auto message = refusal(file, "another batch");
  EXPECT_NE(message.find("' is in use: its lock '" + file + "' is held by pid " + std::to_string(::getpid())),
            std::string::npos)
      << message;
}

}  // namespace
}  // namespace lmkit
