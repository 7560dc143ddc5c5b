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

}  // namespace lmkit
