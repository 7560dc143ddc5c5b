// Devices, seeds and threads: the process-wide state every experiment sets first.
#pragma once
#include <cstdint>
#include <string>

#include "runtime/core/torch.h"

namespace lmkit {

// "cuda" when a CUDA device is usable, else "cpu".
std::string default_device_name();

// Parses "cpu", "cuda", "cuda:N"; throws UsageError naming the string and, for CUDA on a machine
// without it, why it is not usable.
torch::Device parse_device(const std::string& name);

// Seeds Torch's CPU and CUDA generators.
void seed_torch(std::uint64_t seed);

// The most threads set_threads accepts: more than any machine lmkit runs on has hardware threads.
// Torch creates its pool on the next parallel kernel, and asked for millions of threads OpenMP
// aborts the process when the system refuses them.
constexpr int kMaxThreads = 1024;

// Sets Torch's intra-op threads and OpenBLAS's threads: together by default, since on small
// machines the two pools otherwise oversubscribe the cores (see docs/benchmarks.md); blas_threads
// > 0 gives OpenBLAS its own count. Both must be in 1..kMaxThreads (0 for blas_threads: the same).
void set_threads(int threads, int blas_threads = 0);
int get_threads();
// OpenBLAS's thread count, or 0 when Torch's BLAS is not OpenBLAS.
int get_blas_threads();

// How many CUDA devices this process can use (0 without a CUDA build or device).
int cuda_device_count();

}  // namespace lmkit
