// PLIF on CUDA (formula and backward: ops/plif.h).
//
// Forward and ∂/∂logits are pointwise (interval lookup, then a gather from the K knot values and
// slopes). The K slope gradients are a reduction by interval over every logit; with K = 100000 and
// tens of millions of logits, per-block histograms [blocks, K] would cost hundreds of MB and float
// atomics would make the result change from run to run. Instead the logits are taken in fixed
// tiles of kTile elements; in each tile the elements are sorted by interval (cub's radix sort,
// stable, so ties stay in element order; 32-bit keys sorted over the interval's bits only, 32-bit
// tile-local indices) and summed in a fixed order:
//   1. one thread per chunk of kChunk sorted positions sums each run of equal intervals in
//      position order; the chunk's first run (which may have begun in an earlier chunk) goes to
//      chunk_first[chunk], every other run (which begins in this chunk, so no other thread
//      writes it) to run_partial[interval];
//   2. one thread per interval finds its positions [start, end) by binary search, adds its
//      pieces in chunk order, and adds the tile's sum to the interval's (tiles in order);
//   3. after the last tile, one block turns the per-interval sums into slope gradients with the
//      suffix sum of the CPU kernel, partitioned over its threads in a fixed way.
// Sums are in double throughout, and no step depends on timing: the same bits on every run. The
// scratch is O(kTile + K) bytes whatever the number of logits (a sort of all of them, as
// torch::sort with its 64-bit indices, would hold ~28 bytes per logit: ~5 GB at WikiText-2 size).
#include <cuda_runtime.h>

#include <cub/device/device_radix_sort.cuh>

#include "ops/cuda/device_math.cuh"
#include "ops/cuda/kernels.h"

namespace lmkit::ops::cuda {
namespace {

constexpr int kThreads = 256;
constexpr int64_t kChunk = 256;        // sorted positions summed sequentially by one thread
constexpr int64_t kTile = int64_t{1} << 24;  // elements sorted at once (64 MiB of keys)
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
                                       const double* slopes, scalar_t* grad_logits, int64_t n,
                                       int64_t K, double T, double w) {
  for (int64_t e = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; e < n;
       e += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t i = interval_of(logits[e], T, w, K);
    grad_logits[e] = static_cast<scalar_t>(static_cast<double>(grad_out[e]) * slopes[i]);
  }
}

// A tile's sort input: key[t] = the interval of logits[t], index[t] = t.
template <typename scalar_t>
__global__ void tile_keys_kernel(const scalar_t* logits, uint32_t* key, uint32_t* index, int64_t n,
                                 int64_t K, double T, double w) {
  for (int64_t t = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; t < n;
       t += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    key[t] = static_cast<uint32_t>(interval_of(logits[t], T, w, K));
    index[t] = static_cast<uint32_t>(t);
  }
}

// Step 1 (one tile: logits and grad_out point at its first element, order holds tile-local
// indices). Sums are pairs (Σ g·offset, Σ g) stored as two doubles.
template <typename scalar_t>
__global__ void chunk_sums_kernel(const scalar_t* logits, const scalar_t* grad_out,
                                  const uint32_t* sorted_interval, const uint32_t* order,
                                  double* chunk_first, double* run_partial, int64_t n,
                                  int64_t chunks, double T, double w) {
  const int64_t chunk = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (chunk >= chunks) return;
  const int64_t end = (chunk + 1) * kChunk < n ? (chunk + 1) * kChunk : n;
  bool first_run = true;
  for (int64_t p = chunk * kChunk; p < end;) {
    const uint32_t i = sorted_interval[p];
    const double left = knot(i, T, w);
    double offset_sum = 0, grad_sum = 0;
    for (; p < end && sorted_interval[p] == i; ++p) {
      const uint32_t e = order[p];
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

__device__ int64_t lower_bound(const uint32_t* sorted, int64_t n, int64_t value) {
  int64_t low = 0, high = n;
  while (low < high) {
    const int64_t mid = low + (high - low) / 2;
    if (static_cast<int64_t>(sorted[mid]) < value) low = mid + 1; else high = mid;
  }
  return low;
}

// Step 2: interval_sums[2i], [2i + 1] = Σ g·offset, Σ g over the tile's elements in interval i,
// added to the earlier tiles' sums (accumulate) or written (the first tile).
__global__ void interval_sums_kernel(const uint32_t* sorted_interval, const double* chunk_first,
                                     const double* run_partial, double* interval_sums, int64_t n,
                                     int64_t K, bool accumulate) {
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
  if (accumulate) {
    interval_sums[2 * i] += offset_sum;
    interval_sums[2 * i + 1] += grad_sum;
  } else {
    interval_sums[2 * i] = offset_sum;
    interval_sums[2 * i + 1] = grad_sum;
  }
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

// The scratch of launch_plif_slope_grad, in this order, each part 256-byte aligned.
struct SlopeGradScratch {
  std::size_t chunk_first, run_partial, interval_sums, keys, indices, sort, end;
};

std::size_t aligned(std::size_t bytes) { return (bytes + 255) / 256 * 256; }

// A tile's buffers hold `stride` elements each, so that the second of each pair starts 256-byte
// aligned as the first does.
int64_t buffer_stride(int64_t tile) { return (tile + 63) / 64 * 64; }

SlopeGradScratch scratch_layout(int64_t tile, int64_t K, std::size_t sort_bytes) {
  SlopeGradScratch at{};
  const int64_t stride = buffer_stride(tile);
  at.chunk_first = 0;
  at.run_partial = at.chunk_first + aligned(sizeof(double) * 2 * chunk_count(tile));
  at.interval_sums = at.run_partial + aligned(sizeof(double) * 2 * K);
  at.keys = at.interval_sums + aligned(sizeof(double) * 2 * K);
  at.indices = at.keys + aligned(sizeof(uint32_t) * 2 * stride);  // the sort's two key buffers
  at.sort = at.indices + aligned(sizeof(uint32_t) * 2 * stride);  // and two index buffers
  at.end = at.sort + aligned(sort_bytes);
  return at;
}

// The key bits the sort looks at: enough for intervals 0..K−1.
int interval_bits(int64_t K) {
  int bits = 1;
  while (bits < 32 && (int64_t{1} << bits) < K) ++bits;
  return bits;
}

// cub's scratch for sorting `items` pairs (its double-buffer mode: the buffers are ours).
cudaError_t sort_scratch_bytes(int64_t items, int64_t K, Stream stream, std::size_t* bytes) {
  cub::DoubleBuffer<uint32_t> keys(nullptr, nullptr), indices(nullptr, nullptr);
  *bytes = 0;
  return cub::DeviceRadixSort::SortPairs(nullptr, *bytes, keys, indices, static_cast<int>(items), 0,
                                         interval_bits(K), stream);
}

}  // namespace

const char* plif_slope_grad_scratch_bytes(int64_t n, int64_t K, std::size_t* bytes) {
  const int64_t tile = n < kTile ? (n > 0 ? n : 1) : kTile;
  std::size_t sort_bytes = 0;
  if (const cudaError_t status = sort_scratch_bytes(tile, K, nullptr, &sort_bytes); status != cudaSuccess) {
    return cudaGetErrorString(status);
  }
  *bytes = scratch_layout(tile, K, sort_bytes).end;
  return nullptr;
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
                                        const double* slopes, scalar_t* grad_logits, int64_t n,
                                        int64_t K, double T, Stream stream) {
  if (n == 0) return nullptr;
  const double w = 2 * T / static_cast<double>(K);
  backward_logits_kernel<scalar_t><<<detail::elementwise_blocks(n, kThreads), kThreads, 0, stream>>>(
      logits, grad_out, slopes, grad_logits, n, K, T, w);
  return detail::launch_error();
}

template <typename scalar_t>
const char* launch_plif_slope_grad(const scalar_t* logits, const scalar_t* grad_out, void* scratch,
                                   std::size_t scratch_bytes, double* grad_slopes, int64_t n,
                                   int64_t K, double T, Stream stream) {
  const double w = 2 * T / static_cast<double>(K);
  const int64_t tile = n < kTile ? (n > 0 ? n : 1) : kTile;
  std::size_t sort_bytes = 0;
  if (const cudaError_t status = sort_scratch_bytes(tile, K, stream, &sort_bytes); status != cudaSuccess) {
    return cudaGetErrorString(status);
  }
  const auto at = scratch_layout(tile, K, sort_bytes);
  if (scratch_bytes < at.end) return "the scratch buffer is smaller than plif_slope_grad_scratch_bytes says";
  auto* base = static_cast<unsigned char*>(scratch);
  double* chunk_first = reinterpret_cast<double*>(base + at.chunk_first);
  double* run_partial = reinterpret_cast<double*>(base + at.run_partial);
  double* interval_sums = reinterpret_cast<double*>(base + at.interval_sums);
  uint32_t* keys = reinterpret_cast<uint32_t*>(base + at.keys);
  uint32_t* indices = reinterpret_cast<uint32_t*>(base + at.indices);
  void* sort_scratch = base + at.sort;
  const int bits = interval_bits(K);
  // At least one pass, so that interval_sums is written when there are no elements.
  int64_t first = 0;
  do {
    const int64_t items = n - first < tile ? n - first : tile;
    if (items > 0) {
      tile_keys_kernel<scalar_t><<<detail::elementwise_blocks(items, kThreads), kThreads, 0, stream>>>(
          logits + first, keys, indices, items, K, T, w);
      if (const char* error = detail::launch_error()) return error;
    }
    const int64_t stride = buffer_stride(tile);
    cub::DoubleBuffer<uint32_t> sorted_keys(keys, keys + stride), sorted_indices(indices, indices + stride);
    if (items > 0) {
      std::size_t available = sort_bytes;
      if (const cudaError_t status = cub::DeviceRadixSort::SortPairs(
              sort_scratch, available, sorted_keys, sorted_indices, static_cast<int>(items), 0, bits, stream);
          status != cudaSuccess) {
        return cudaGetErrorString(status);
      }
    }
    const int64_t chunks = chunk_count(items);
    if (chunks > 0) {
      chunk_sums_kernel<scalar_t><<<static_cast<unsigned>((chunks + kThreads - 1) / kThreads), kThreads, 0, stream>>>(
          logits + first, grad_out + first, sorted_keys.Current(), sorted_indices.Current(), chunk_first,
          run_partial, items, chunks, T, w);
      if (const char* error = detail::launch_error()) return error;
    }
    interval_sums_kernel<<<static_cast<unsigned>((K + kThreads - 1) / kThreads), kThreads, 0, stream>>>(
        sorted_keys.Current(), chunk_first, run_partial, interval_sums, items, K, /*accumulate=*/first > 0);
    if (const char* error = detail::launch_error()) return error;
    first += items;
  } while (first < n);
  suffix_kernel<<<1, kSuffixThreads, 0, stream>>>(interval_sums, grad_slopes, K, T, w);
  return detail::launch_error();
}

template const char* launch_plif_forward<float>(const float*, const double*, const double*, float*,
                                                int64_t, int64_t, double, Stream);
template const char* launch_plif_forward<double>(const double*, const double*, const double*,
                                                 double*, int64_t, int64_t, double, Stream);
template const char* launch_plif_backward_logits<float>(const float*, const float*, const double*,
                                                        float*, int64_t, int64_t, double, Stream);
template const char* launch_plif_backward_logits<double>(const double*, const double*,
                                                         const double*, double*, int64_t, int64_t,
                                                         double, Stream);
template const char* launch_plif_slope_grad<float>(const float*, const float*, void*, std::size_t,
                                                   double*, int64_t, int64_t, double, Stream);
template const char* launch_plif_slope_grad<double>(const double*, const double*, void*,
                                                    std::size_t, double*, int64_t, int64_t, double,
                                                    Stream);

}  // namespace lmkit::ops::cuda
