#include "ops/device_memory.h"

#include "runtime/core/device.h"
#include "runtime/core/error.h"
#include "runtime/core/number_text.h"

#ifdef LMKIT_OPS_CUDA
#include "ops/cuda/dispatch.h"
#endif

namespace lmkit::ops {
namespace {

// The CUDA device a name stands for ("cuda": the current one, -1), refused by name otherwise.
int cuda_index(const std::string& name, const char* function) {
  const auto device = parse_device(name);  // unknown names, and CUDA where it is not usable
  if (!device.is_cuda()) {
    throw UsageError(std::string(function) + ": '" + name +
                     "' is not a CUDA device; the allocator's counts exist for \"cuda\" or \"cuda:N\" "
                     "(a CPU process's peak memory is its peak RSS, VmHWM in /proc/self/status)");
  }
  return device.has_index() ? device.index() : -1;
}

[[noreturn]] void no_cuda_side(const char* function) {
  throw EnvironmentError(std::string(function) +
                         ": this build of lmkit has no CUDA side (it was configured without nvcc), so it cannot "
                         "read the CUDA allocator; rebuild with the CUDA toolkit (docs/getting-started.md)");
}

}  // namespace

DeviceMemory device_memory(const std::string& device) {
  const int index = cuda_index(device, "device_memory");
#ifdef LMKIT_OPS_CUDA
  const auto counts = cuda::memory_counts(index);
  DeviceMemory m;
  m.device = "cuda:" + integer_text(counts.index);
  m.allocated = counts.allocated;
  m.peak_allocated = counts.peak_allocated;
  m.reserved = counts.reserved;
  return m;
#else
  (void)index;
  no_cuda_side("device_memory");
#endif
}

std::int64_t allocated_device_bytes(int index) noexcept {
#ifdef LMKIT_OPS_CUDA
  try {
    return cuda::memory_counts(index).allocated;
  } catch (...) {
    return -1;
  }
#else
  (void)index;
  return -1;
#endif
}

void reset_peak_device_memory(const std::string& device) {
  const int index = cuda_index(device, "reset_peak_device_memory");
#ifdef LMKIT_OPS_CUDA
  cuda::reset_peak_memory(index);
#else
  (void)index;
  no_cuda_side("reset_peak_device_memory");
#endif
}

}  // namespace lmkit::ops
