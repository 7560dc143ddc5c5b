// Fused GSS transform + log-softmax on CUDA (formula and backward: ops/gss_log_softmax.h).
// One block per row. Forward reads each logit once: every thread keeps a running (max, Σ exp)
// pair over its strided elements while writing z, the block combines the pairs, and a second pass
// over the thread's own outputs subtracts the row's max and log-sum (in that order). Backward is one block reduction
// (Σ g) and one pointwise pass. Sums run in scalar_t with a fixed reduction tree: the same bits on
// every run.
#include <cuda_runtime.h>

#include "ops/cuda/device_math.cuh"
#include "ops/cuda/kernels.h"

namespace lmkit::ops::cuda {
namespace {

using detail::block_reduce;
using detail::kRowThreads;

// Largest grid the row kernels launch; rows beyond it are taken in turn by the same blocks.
constexpr int64_t kMaxRowBlocks = 1 << 20;

unsigned row_blocks(int64_t rows) {
  return static_cast<unsigned>(rows < kMaxRowBlocks ? rows : kMaxRowBlocks);
}

template <typename scalar_t>
__global__ void __launch_bounds__(kRowThreads)
    forward_kernel(const scalar_t* logits, scalar_t* out, int64_t rows, int64_t n, scalar_t c,
                   scalar_t k) {
  for (int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
    const scalar_t* x = logits + row * n;
    scalar_t* y = out + row * n;
    detail::OnlineLogSumExp<scalar_t> local;  // over this thread's elements
    for (int64_t i = threadIdx.x; i < n; i += blockDim.x) {
      const scalar_t z = detail::gss_transform(x[i], c, k);
      y[i] = z;
      local.add(z);
    }
    const auto total = local.block_max_and_log_sum();
    // Each thread rewrites only the elements it wrote above: no barrier needed.
    for (int64_t i = threadIdx.x; i < n; i += blockDim.x) y[i] = (y[i] - total.max) - total.log_sum;
  }
}

template <typename scalar_t>
__global__ void __launch_bounds__(kRowThreads)
    backward_kernel(const scalar_t* logits, const scalar_t* out, const scalar_t* grad_out,
                    scalar_t* grad_logits, int64_t rows, int64_t n, scalar_t c, scalar_t k) {
  for (int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
    const int64_t base = row * n;
    scalar_t partial = 0;
    for (int64_t i = threadIdx.x; i < n; i += blockDim.x) partial += grad_out[base + i];
    const scalar_t total = block_reduce(partial, detail::Sum{}, scalar_t(0));
    for (int64_t i = threadIdx.x; i < n; i += blockDim.x) {
      const scalar_t dz = grad_out[base + i] - detail::exp_of(out[base + i]) * total;
      grad_logits[base + i] = dz * detail::gss_transform_slope(logits[base + i], c, k);
    }
  }
}

}  // namespace

template <typename scalar_t>
const char* launch_gss_log_softmax_forward(const scalar_t* logits, scalar_t* out, int64_t rows,
                                           int64_t n, double c, double k, Stream stream) {
  if (rows == 0 || n == 0) return nullptr;
  forward_kernel<scalar_t><<<row_blocks(rows), kRowThreads, 0, stream>>>(
      logits, out, rows, n, static_cast<scalar_t>(c), static_cast<scalar_t>(k));
  return detail::launch_error();
}

template <typename scalar_t>
const char* launch_gss_log_softmax_backward(const scalar_t* logits, const scalar_t* out,
                                            const scalar_t* grad_out, scalar_t* grad_logits,
                                            int64_t rows, int64_t n, double c, double k,
                                            Stream stream) {
  if (rows == 0 || n == 0) return nullptr;
  backward_kernel<scalar_t><<<row_blocks(rows), kRowThreads, 0, stream>>>(
      logits, out, grad_out, grad_logits, rows, n, static_cast<scalar_t>(c), static_cast<scalar_t>(k));
  return detail::launch_error();
}

template const char* launch_gss_log_softmax_forward<float>(const float*, float*, int64_t, int64_t,
                                                           double, double, Stream);
template const char* launch_gss_log_softmax_forward<double>(const double*, double*, int64_t, int64_t,
                                                            double, double, Stream);
template const char* launch_gss_log_softmax_backward<float>(const float*, const float*, const float*,
                                                            float*, int64_t, int64_t, double, double,
                                                            Stream);
template const char* launch_gss_log_softmax_backward<double>(const double*, const double*,
                                                             const double*, double*, int64_t,
                                                             int64_t, double, double, Stream);

}  // namespace lmkit::ops::cuda
