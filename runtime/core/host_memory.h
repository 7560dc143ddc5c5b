// How much host memory this machine has, for decisions made before a large allocation (an AWD-LSTM
// that could never fit; a logP matrix decomposed whole or streamed).
#pragma once
#include <cstdint>
#include <string>

namespace lmkit {

// Installed RAM; INT64_MAX when the system does not say.
std::int64_t physical_memory_bytes();
// Memory a new allocation can get without swapping, now (Linux: MemAvailable of /proc/meminfo;
// elsewhere the free pages); INT64_MAX when the system does not say.
std::int64_t available_memory_bytes();
// "3.3 GiB"
std::string gibibytes(std::int64_t bytes);

// Tells glibc's malloc to keep freed memory in the process instead of returning it to the kernel
// after every training step (docs/benchmarks.md, "Allocation"): a step frees and re-allocates the
// same activation-sized blocks, and glibc's defaults trimmed the heap top and re-faulted those pages
// each time (17% of a tiny model's step in the kernel's page-fault path). Sets the mmap threshold
// to its 64-bit maximum (32 MiB), the trim threshold to 1 GiB and a top pad of 64 MiB. Once per
// process; does nothing when LMKIT_SYSTEM_MALLOC=1 or when GLIBC_TUNABLES already sets a malloc
// tunable (the user's own choice wins), or on a C library that is not glibc. Returns whether it
// changed anything.
bool keep_freed_memory_in_process();

}  // namespace lmkit
