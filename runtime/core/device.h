// Devices, seeds and threads: the process-wide state every experiment sets first.
#pragma once
#include <cstdint>
#include <string>
#include <utility>

#include "runtime/config/bound_options.h"
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

// Gives lmkit `cores` CPU cores. By default OpenBLAS gets them all and Torch's intra-op pool one
// thread: the GEMMs are where the threads pay, and both pools at full size oversubscribe the cores
// (measured on 2 cores, docs/benchmarks.md "Threads": Torch 2 + OpenBLAS 2 ran at half the speed
// of Torch 1 + OpenBLAS 2 on every workload). torch_threads / blas_threads > 0 set a pool
// explicitly. Every count must be in 1..kMaxThreads (0 for the two overrides: the default).
void set_threads(int cores, int torch_threads = 0, int blas_threads = 0);
// Torch's intra-op threads.
int get_threads();
// OpenBLAS's thread count, or 0 when Torch's BLAS is not OpenBLAS.
int get_blas_threads();

// How many CUDA devices this process can use (0 without a CUDA build or device).
int cuda_device_count();

// set_threads as lmkit.set_threads asks it: the cores, and explicit pool sizes (0: the default).
struct ThreadOptions {
  std::int64_t torch = 0;
  std::int64_t blas = 0;
};
const config::BoundOptions<ThreadOptions>& declared_options(config::Tag<ThreadOptions>);
void use_threads(std::int64_t cores, const ThreadOptions& options);
// Threads Torch's CPU kernels use, and OpenBLAS's (0 when Torch's BLAS is not OpenBLAS).
std::pair<int, int> thread_counts();

}  // namespace lmkit
