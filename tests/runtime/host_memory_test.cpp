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

// Each CTest case runs in its own process, so this call is the process's first.
TEST(HostMemoryTest, FreedMemoryStaysInTheProcessUnlessTheUserChoseOtherwise) {
  ::unsetenv("LMKIT_SYSTEM_MALLOC");
  ::unsetenv("GLIBC_TUNABLES");
#if defined(__GLIBC__) && !defined(__SANITIZE_ADDRESS__)
  EXPECT_TRUE(keep_freed_memory_in_process());
#else
  // the sanitizers' allocator (or another C library) ignores glibc's mallopt
  keep_freed_memory_in_process();
#endif
  // once per process: a later opt-out does not undo it, and the answer stays the same
  ::setenv("LMKIT_SYSTEM_MALLOC", "1", 1);
  EXPECT_EQ(keep_freed_memory_in_process(), keep_freed_memory_in_process());
}

TEST(HostMemoryTest, TheUsersOwnMallocTunablesWin) {
  ::setenv("GLIBC_TUNABLES", "glibc.malloc.trim_threshold=4096", 1);
  EXPECT_FALSE(keep_freed_memory_in_process());
}

}  // namespace
}  // namespace lmkit
