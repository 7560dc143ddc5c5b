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

// Sets Torch's intra-op threads and OpenBLAS's threads together: on small machines the two pools
// otherwise oversubscribe the cores (see docs/benchmarks.md).
void set_threads(int threads);
int get_threads();

// How many CUDA devices this process can use (0 without a CUDA build or device).
int cuda_device_count();

}  // namespace lmkit
