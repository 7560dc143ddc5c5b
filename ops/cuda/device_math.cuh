// Device helpers shared by lmkit's kernels: the GSS transform in the same numerically safe form as
// the CPU kernels, block-wide reductions, and launch-error reporting. CUDA runtime only (no Torch).
#pragma once
#include <cuda_runtime.h>

#include <cstdint>

namespace lmkit::ops::cuda::detail {

// Every row kernel runs this many threads: a multiple of the warp size (block_reduce relies on it),
// enough to stream a vocabulary-sized row, few enough that short rows waste little.
constexpr int kRowThreads = 256;
constexpr unsigned kFullWarp = 0xffffffffu;

__device__ __forceinline__ float exp_of(float x) { return expf(x); }
__device__ __forceinline__ double exp_of(double x) { return exp(x); }
__device__ __forceinline__ float log_of(float x) { return logf(x); }
__device__ __forceinline__ double log_of(double x) { return log(x); }
__device__ __forceinline__ float log1p_of(float x) { return log1pf(x); }
__device__ __forceinline__ double log1p_of(double x) { return log1p(x); }

template <typename T>
__device__ __forceinline__ T negative_infinity() {
  return -static_cast<T>(INFINITY);
}

// max(x, 0) + log1p(exp(−|x|)): never exponentiates a large positive number.
template <typename T>
__device__ __forceinline__ T softplus(T x) {
  return (x > T(0) ? x : T(0)) + log1p_of(exp_of(-(x < T(0) ? -x : x)));
}

template <typename T>
__device__ __forceinline__ T sigmoid(T x) {
  if (x >= T(0)) return T(1) / (T(1) + exp_of(-x));
  const T e = exp_of(x);
  return e / (T(1) + e);
}

// z = k·(l − c) + c − (k − 1)·softplus(l − c), the smooth two-piece linear PL̃(l; c, k).
template <typename T>
__device__ __forceinline__ T gss_transform(T l, T c, T k) {
  const T u = l - c;
  return k * u + c - (k - T(1)) * softplus(u);
}

// ∂z/∂l = k − (k − 1)·σ(l − c).
template <typename T>
__device__ __forceinline__ T gss_transform_slope(T l, T c, T k) {
  return k - (k - T(1)) * sigmoid(l - c);
}

struct Max {
  template <typename T>
  __device__ __forceinline__ T operator()(T a, T b) const {
    // NaN wins, so a NaN in a row shows up in its output instead of vanishing.
    return (a != a || a > b) ? a : b;
  }
};
struct Sum {
  template <typename T>
  __device__ __forceinline__ T operator()(T a, T b) const { return a + b; }
};

// Reduces one value per thread over the whole block and returns the result to every thread. The
// combination order is fixed (warp shuffles, then warp 0 over the warp results), so the result is
// the same bits on every run. Must be reached by all threads of a block whose size is a multiple of 32.
template <typename T, typename Combine>
__device__ T block_reduce(T value, Combine combine, T identity) {
  __shared__ T warp_results[32];
  __shared__ T result;
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  for (int offset = 16; offset > 0; offset /= 2)
    value = combine(value, __shfl_down_sync(kFullWarp, value, offset));
  __syncthreads();  // a previous call may still be reading `result`
  if (lane == 0) warp_results[warp] = value;
  __syncthreads();
  if (warp == 0) {
    const int warps = static_cast<int>(blockDim.x / 32);
    value = lane < warps ? warp_results[lane] : identity;
    for (int offset = 16; offset > 0; offset /= 2)
      value = combine(value, __shfl_down_sync(kFullWarp, value, offset));
    if (lane == 0) result = value;
  }
  __syncthreads();
  return result;
}

// A thread's running log Σ exp(z) in one pass (max and the sum rescaled to it), and the whole
// block's logsumexp from every thread's (two block reductions, so also deterministic).
template <typename T>
struct OnlineLogSumExp {
  T max = negative_infinity<T>();
  T sum = T(0);  // Σ exp(z − max)
  __device__ __forceinline__ void add(T z) {
    if (z > max) {
      sum = sum * exp_of(max - z) + T(1);
      max = z;
    } else if (z != negative_infinity<T>()) {
      sum += exp_of(z - max);
    }
  }
  // The row's max and log Σ exp(z − max), kept apart: a log-probability is (z − max) − log_sum,
  // since in float32 the sum max + log_sum near ±1e4 rounds at its own ulp (~1e-3).
  // Must be reached by every thread of the block.
  struct Total {
    T max;
    T log_sum;
  };
  __device__ Total block_max_and_log_sum() const {
    const T row_max = block_reduce(max, Max{}, negative_infinity<T>());
    const T rescaled = max == negative_infinity<T>() ? T(0) : sum * exp_of(max - row_max);
    return {row_max, log_of(block_reduce(rescaled, Sum{}, T(0)))};
  }
};

inline const char* launch_error() {
  const cudaError_t status = cudaGetLastError();
  return status == cudaSuccess ? nullptr : cudaGetErrorString(status);
}

// Blocks for a grid-stride loop over n elements: enough to fill any current GPU, never more than
// the elements need.
inline unsigned elementwise_blocks(int64_t n, int threads) {
  const int64_t wanted = (n + threads - 1) / threads;
  const int64_t cap = 65536;
  return static_cast<unsigned>(wanted < 1 ? 1 : (wanted > cap ? cap : wanted));
}

}  // namespace lmkit::ops::cuda::detail
