// Host memory facts and the allocator setting every lmkit process starts with.
#include <gtest/gtest.h>

#include <cstdlib>

#include "runtime/core/host_memory.h"

namespace lmkit {
namespace {

TEST(HostMemoryTest, AvailableMemoryIsPositiveAndAtMostTheInstalledMemory) {
  const auto installed = physical_memory_bytes();
  const auto available = available_memory_bytes();
  EXPECT_GT(available, 0);
  EXPECT_LE(available, installed);
  EXPECT_EQ(gibibytes(3 * 1024LL * 1024 * 1024 + 400 * 1024LL * 1024), "3.4 GiB");
}

// Each CTest case runs in its own process, so this call is the process's first. The environment
// each case needs comes from CTest (tests/CMakeLists.txt): a test never edits its own.
bool user_chose_the_allocator() {
  return std::getenv("LMKIT_SYSTEM_MALLOC") != nullptr || std::getenv("GLIBC_TUNABLES") != nullptr;
}

TEST(HostMemoryTest, FreedMemoryStaysInTheProcessUnlessTheUserChoseOtherwise) {
  if (user_chose_the_allocator()) GTEST_SKIP() << "LMKIT_SYSTEM_MALLOC or GLIBC_TUNABLES is set (CTest unsets both)";
#if defined(__GLIBC__) && !defined(__SANITIZE_ADDRESS__)
  EXPECT_TRUE(keep_freed_memory_in_process());
#else
  // the sanitizers' allocator (or another C library) ignores glibc's mallopt
  keep_freed_memory_in_process();
#endif
  // once per process: the answer stays the same
  EXPECT_EQ(keep_freed_memory_in_process(), keep_freed_memory_in_process());
}

// Run by CTest twice: with LMKIT_SYSTEM_MALLOC=1, and with GLIBC_TUNABLES setting a malloc tunable.
TEST(HostMemoryTest, TheUsersOwnAllocatorChoiceWins) {
  if (!user_chose_the_allocator()) GTEST_SKIP() << "run by CTest with LMKIT_SYSTEM_MALLOC or GLIBC_TUNABLES set";
  EXPECT_FALSE(keep_freed_memory_in_process());
}

}  // namespace
}  // namespace lmkit
