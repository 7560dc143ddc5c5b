// What Torch's CUDA caching allocator holds on a device. A benchmark or a report quotes the peak of
// live tensors (what a model and its step need), not nvidia-smi's figure, which adds the CUDA
// context and the allocator's cache and so hides the difference between two heads.
#pragma once
#include <cstdint>
#include <string>

#include "runtime/config/declared_result.h"

namespace lmkit::ops {

struct DeviceMemory {
  std::string device;               // "cuda:N"
  std::int64_t allocated = 0;       // bytes in live tensors now
  std::int64_t peak_allocated = 0;  // the most at once since the process began or the last reset
  std::int64_t reserved = 0;        // bytes the allocator holds from the driver: live tensors and its cache
};
inline auto declared_result(config::Tag<DeviceMemory>) {
  using config::result_field;
  return config::result_table(result_field("device", &DeviceMemory::device, "\"cuda:N\""),
                              result_field("allocated", &DeviceMemory::allocated, "bytes in live tensors now"),
                              result_field("peak_allocated", &DeviceMemory::peak_allocated,
                                           "the most bytes in live tensors at once since the start or the last reset"),
                              result_field("reserved", &DeviceMemory::reserved,
                                           "bytes held from the driver (live tensors and the allocator's cache)"));
}

// The counts of "cuda" (the current device) or "cuda:N". Throws UsageError for another device
// (a CPU process's peak is its peak RSS: VmHWM in /proc/self/status) and where CUDA is not usable,
// EnvironmentError where this build has no CUDA side (built without nvcc) or the allocator keeps no
// counts.
DeviceMemory device_memory(const std::string& device);

// Bytes in live tensors on "cuda:index" (-1: the current device) without raising: -1 where this
// build or this Torch cannot say. Read for every CUDA tensor that reaches Lua, to pace its collector
// (runtime/core/tensor_memory.h).
std::int64_t allocated_device_bytes(int index) noexcept;

// Starts a new peak at the current allocation, e.g. between two models measured in one process.
void reset_peak_device_memory(const std::string& device);

}  // namespace lmkit::ops
