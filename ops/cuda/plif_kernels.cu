// PLIF on CUDA (formula and backward: ops/plif.h).
//
// Forward and ∂/∂logits are pointwise (interval lookup, then a gather from the K knot values and
// slopes). The K slope gradients are a reduction by interval over every logit; with K = 100000 and
// tens of millions of logits, per-block histograms [blocks, K] would cost hundreds of MB and float
// atomics would make the result change from run to run. Instead the elements arrive sorted by
// interval (a stable sort by the caller, so ties stay in element order) and are summed in a fixed
// order:
//   1. one thread per chunk of kChunk sorted positions sums each run of equal intervals in
//      position order; the chunk's first run (which may have begun in an earlier chunk) goes to
//      chunk_first[chunk], every other run (which begins in this chunk, so no other thread
//      writes it) to run_partial[interval];
//   2. one thread per interval finds its positions [start, end) by binary search and adds its
//      pieces in chunk order;
//   3. one block turns the per-interval sums into slope gradients with the suffix sum of the CPU
//      kernel, partitioned over its threads in a fixed way.
// Sums are in double throughout, and no step depends on timing: the same bits on every run.
#include <cuda_runtime.h>

#include "ops/cuda/device_math.cuh"
#include "ops/cuda/kernels.h"

namespace lmkit::ops::cuda {
namespace {

constexpr int kThreads = 256;
constexpr int64_t kChunk = 256;        // sorted positions summed sequentially by one thread
constexpr int kSuffixThreads = 1024;   // the one block of step 3

// Same arithmetic as the CPU kernel's interval(): clamped so the end pieces extend; NaN → 0.
template <typename scalar_t>
__device__ __forceinline__ int64_t interval_of(scalar_t x, double T, double w, int64_t K) {
  const double i = floor((static_cast<double>(x) + T) / w);
  if (!(i >= 0)) return 0;
  return i >= static_cast<double>(K) ? K - 1 : static_cast<int64_t>(i);
}

__device__ __forceinline__ double knot(int64_t i, double T, double w) {
  return -T + static_cast<double>(i) * w;
}

template <typename scalar_t>
__global__ void forward_kernel(const scalar_t* logits, const double* knots, const double* slopes,
                               scalar_t* out, int64_t n, int64_t K, double T, double w) {
  for (int64_t e = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; e < n;
       e += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t i = interval_of(logits[e], T, w, K);
    const double offset = static_cast<double>(logits[e]) - knot(i, T, w);
    out[e] = static_cast<scalar_t>(knots[i] + slopes[i] * offset);
  }
}

template <typename scalar_t>
__global__ void backward_logits_kernel(const scalar_t* logits, const scalar_t* grad_out,
                                       const double* slopes, scalar_t* grad_logits,
                                       int32_t* interval, int64_t n, int64_t K, double T, double w) {
  for (int64_t e = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; e < n;
       e += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t i = interval_of(logits[e], T, w, K);
    grad_logits[e] = static_cast<scalar_t>(static_cast<double>(grad_out[e]) * slopes[i]);
    interval[e] = static_cast<int32_t>(i);
  }
}

// Step 1. Sums are pairs (Σ g·offset, Σ g) stored as two doubles.
template <typename scalar_t>
__global__ void chunk_sums_kernel(const scalar_t* logits, const scalar_t* grad_out,
                                  const int32_t* sorted_interval, const int64_t* order,
                                  double* chunk_first, double* run_partial, int64_t n,
                                  int64_t chunks, double T, double w) {
  const int64_t chunk = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (chunk >= chunks) return;
  const int64_t end = (chunk + 1) * kChunk < n ? (chunk + 1) * kChunk : n;
  bool first_run = true;
  for (int64_t p = chunk * kChunk; p < end;) {
    const int32_t i = sorted_interval[p];
    const double left = knot(i, T, w);
    double offset_sum = 0, grad_sum = 0;
    for (; p < end && sorted_interval[p] == i; ++p) {
      const int64_t e = order[p];
      const double g = static_cast<double>(grad_out[e]);
      offset_sum += g * (static_cast<double>(logits[e]) - left);
      grad_sum += g;
    }
    double* target = first_run ? chunk_first + 2 * chunk : run_partial + 2 * static_cast<int64_t>(i);
    target[0] = offset_sum;
    target[1] = grad_sum;
    first_run = false;
  }
}

__device__ int64_t lower_bound(const int32_t* sorted, int64_t n, int64_t value) {
  int64_t low = 0, high = n;
  while (low < high) {
    const int64_t mid = low + (high - low) / 2;
    if (sorted[mid] < value) low = mid + 1; else high = mid;
  }
  return low;
}

// Step 2: interval_sums[2i], [2i + 1] = Σ g·offset, Σ g over the elements in interval i.
__global__ void interval_sums_kernel(const int32_t* sorted_interval, const double* chunk_first,
                                     const double* run_partial, double* interval_sums, int64_t n,
                                     int64_t K) {
  const int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (i >= K) return;
  const int64_t start = lower_bound(sorted_interval, n, i);
  const int64_t end = lower_bound(sorted_interval, n, i + 1);
  double offset_sum = 0, grad_sum = 0;
  if (start < end) {
    const int64_t first_chunk = start / kChunk, last_chunk = (end - 1) / kChunk;
    const double* head = start % kChunk != 0 ? run_partial + 2 * i : chunk_first + 2 * first_chunk;
    offset_sum = head[0];
    grad_sum = head[1];
    for (int64_t chunk = first_chunk + 1; chunk <= last_chunk; ++chunk) {
      offset_sum += chunk_first[2 * chunk];
      grad_sum += chunk_first[2 * chunk + 1];
    }
  }
  interval_sums[2 * i] = offset_sum;
  interval_sums[2 * i + 1] = grad_sum;
}

// Step 3, one block: grad_slopes[j] = offset_sum[j] + w·Σ_{i>j} grad_sum[i], plus −T·Σ_i grad_sum[i]
// for j = 0. Thread t owns the contiguous slopes [t·per, (t+1)·per); thread 0 adds up the owners'
// totals from the right in a fixed order.
__global__ void __launch_bounds__(kSuffixThreads)
    suffix_kernel(const double* interval_sums, double* grad_slopes, int64_t K, double T, double w) {
  __shared__ double owned_total[kSuffixThreads];
  __shared__ double later_than_owner[kSuffixThreads];
  __shared__ double total;
  const int64_t per = (K + blockDim.x - 1) / blockDim.x;
  const int64_t begin = threadIdx.x * per < K ? threadIdx.x * per : K;
  const int64_t end = begin + per < K ? begin + per : K;
  double mine = 0;
  for (int64_t j = begin; j < end; ++j) mine += interval_sums[2 * j + 1];
  owned_total[threadIdx.x] = mine;
  __syncthreads();
  if (threadIdx.x == 0) {
    double later = 0;
    for (int t = static_cast<int>(blockDim.x) - 1; t >= 0; --t) {
      later_than_owner[t] = later;
      later += owned_total[t];
    }
    total = later;
  }
  __syncthreads();
  double later = later_than_owner[threadIdx.x];
  for (int64_t j = end - 1; j >= begin; --j) {
    grad_slopes[j] = interval_sums[2 * j] + w * later;
    later += interval_sums[2 * j + 1];
  }
  __syncthreads();
  if (threadIdx.x == 0) grad_slopes[0] += -T * total;
}

int64_t chunk_count(int64_t n) { return (n + kChunk - 1) / kChunk; }

}  // namespace

int64_t plif_slope_grad_scratch_size(int64_t n, int64_t K) {
  return 2 * chunk_count(n) + 2 * K + 2 * K;  // chunk_first, run_partial, interval_sums
}

template <typename scalar_t>
const char* launch_plif_forward(const scalar_t* logits, const double* knots, const double* slopes,
                                scalar_t* out, int64_t n, int64_t K, double T, Stream stream) {
  if (n == 0) return nullptr;
  const double w = 2 * T / static_cast<double>(K);
  forward_kernel<scalar_t><<<detail::elementwise_blocks(n, kThreads), kThreads, 0, stream>>>(
      logits, knots, slopes, out, n, K, T, w);
  return detail::launch_error();
}

template <typename scalar_t>
const char* launch_plif_backward_logits(const scalar_t* logits, const scalar_t* grad_out,
                                        const double* slopes, scalar_t* grad_logits,
                                        int32_t* interval, int64_t n, int64_t K, double T,
                                        Stream stream) {
  if (n == 0) return nullptr;
  const double w = 2 * T / static_cast<double>(K);
  backward_logits_kernel<scalar_t><<<detail::elementwise_blocks(n, kThreads), kThreads, 0, stream>>>(
      logits, grad_out, slopes, grad_logits, interval, n, K, T, w);
  return detail::launch_error();
}

template <typename scalar_t>
const char* launch_plif_slope_grad(const scalar_t* logits, const scalar_t* grad_out,
                                   const int32_t* sorted_interval, const int64_t* order,
                                   double* scratch, double* grad_slopes, int64_t n, int64_t K,
                                   double T, Stream stream) {
  const double w = 2 * T / static_cast<double>(K);
  const int64_t chunks = chunk_count(n);
  double* chunk_first = scratch;
  double* run_partial = chunk_first + 2 * chunks;
  double* interval_sums = run_partial + 2 * K;
  if (chunks > 0) {
    chunk_sums_kernel<scalar_t><<<static_cast<unsigned>((chunks + kThreads - 1) / kThreads), kThreads, 0, stream>>>(
        logits, grad_out, sorted_interval, order, chunk_first, run_partial, n, chunks, T, w);
    if (const char* error = detail::launch_error()) return error;
  }
  interval_sums_kernel<<<static_cast<unsigned>((K + kThreads - 1) / kThreads), kThreads, 0, stream>>>(
      sorted_interval, chunk_first, run_partial, interval_sums, n, K);
  if (const char* error = detail::launch_error()) return error;
  suffix_kernel<<<1, kSuffixThreads, 0, stream>>>(interval_sums, grad_slopes, K, T, w);
  return detail::launch_error();
}

template const char* launch_plif_forward<float>(const float*, const double*, const double*, float*,
                                                int64_t, int64_t, double, Stream);
template const char* launch_plif_forward<double>(const double*, const double*, const double*,
                                                 double*, int64_t, int64_t, double, Stream);
template const char* launch_plif_backward_logits<float>(const float*, const float*, const double*,
                                                        float*, int32_t*, int64_t, int64_t, double,
                                                        Stream);
template const char* launch_plif_backward_logits<double>(const double*, const double*,
                                                         const double*, double*, int32_t*, int64_t,
                                                         int64_t, double, Stream);
template const char* launch_plif_slope_grad<float>(const float*, const float*, const int32_t*,
                                                   const int64_t*, double*, double*, int64_t,
                                                   int64_t, double, Stream);
template const char* launch_plif_slope_grad<double>(const double*, const double*, const int32_t*,
                                                    const int64_t*, double*, double*, int64_t,
                                                    int64_t, double, Stream);

}  // namespace lmkit::ops::cuda
