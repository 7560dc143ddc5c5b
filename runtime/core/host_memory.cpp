#include "runtime/core/host_memory.h"

#include <unistd.h>

#if defined(__GLIBC__)
#include <malloc.h>
#endif

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <fstream>
#include <limits>
#include <sstream>

namespace lmkit {
namespace {

std::int64_t pages_to_bytes(long pages) {
  const long page_size = ::sysconf(_SC_PAGE_SIZE);
  if (pages <= 0 || page_size <= 0) return std::numeric_limits<std::int64_t>::max();
  if (pages > std::numeric_limits<std::int64_t>::max() / page_size) return std::numeric_limits<std::int64_t>::max();
  return static_cast<std::int64_t>(pages) * page_size;
}

}  // namespace

std::int64_t physical_memory_bytes() { return pages_to_bytes(::sysconf(_SC_PHYS_PAGES)); }

std::int64_t available_memory_bytes() {
  // MemAvailable counts reclaimable page cache too, unlike the free pages of sysconf.
  std::ifstream meminfo("/proc/meminfo");
  std::string line;
  while (std::getline(meminfo, line)) {
    if (line.rfind("MemAvailable:", 0) != 0) continue;
    std::istringstream fields(line.substr(13));
    long long kibibytes = 0;
    if (fields >> kibibytes && kibibytes > 0 && kibibytes < std::numeric_limits<std::int64_t>::max() / 1024) {
      return static_cast<std::int64_t>(kibibytes) * 1024;
    }
  }
  return pages_to_bytes(::sysconf(_SC_AVPHYS_PAGES));
}

std::string gibibytes(std::int64_t bytes) {
  char text[32];
  std::snprintf(text, sizeof text, "%.1f GiB", static_cast<double>(bytes) / (1024.0 * 1024.0 * 1024.0));
  return text;
}

bool keep_freed_memory_in_process() {
  static std::once_flag once;
  static bool changed = false;
  std::call_once(once, [] {
#if defined(__GLIBC__)
    const char* opt_out = std::getenv("LMKIT_SYSTEM_MALLOC");
    const char* tunables = std::getenv("GLIBC_TUNABLES");
    if ((opt_out && std::strcmp(opt_out, "1") == 0) || (tunables && std::strstr(tunables, "glibc.malloc."))) return;
    changed = mallopt(M_MMAP_THRESHOLD, 32 * 1024 * 1024) == 1;
    changed = mallopt(M_TRIM_THRESHOLD, 1024 * 1024 * 1024) == 1 && changed;
    changed = mallopt(M_TOP_PAD, 64 * 1024 * 1024) == 1 && changed;
#endif
  });
  return changed;
}

}  // namespace lmkit
