// The per-component row work of the mixture NLL on CUDA (formula and backward: ops/mixture_nll.h).
//
// The op's cost on a GPU is the GEMMs (h·Eᵀ forward, gz·E and gzᵀ·h backward), which stay with
// cuBLAS through ATen. What these kernels replace is everything between them on the [M, N] logits
// block: on the ATen path each component spends one pass per elementwise op with a temporary
// [M, N] for most of them (the GSS transform is five of them, logsumexp three more, the backward's
// exp/scale/scatter/sigmoid another five). Here the forward reads the block once and the backward
// reads and overwrites it once.
#include <cuda_runtime.h>

#include "ops/cuda/device_math.cuh"
#include "ops/cuda/kernels.h"

namespace lmkit::ops::cuda {
namespace {

using detail::kRowThreads;

constexpr int kThreads = 256;

// z = G(l) for MoSS components; MoS components (kappa = 1) use the logits as they are, exactly as
// the CPU path does.
template <typename scalar_t>
__device__ __forceinline__ scalar_t component_logit(scalar_t l, bool transform, scalar_t c, scalar_t kappa) {
  return transform ? detail::gss_transform(l, c, kappa) : l;
}

// One block per context row m (M fits a grid: it is a batch of positions).
template <typename scalar_t>
__global__ void __launch_bounds__(kRowThreads)
    forward_kernel(const scalar_t* logits, const scalar_t* log_prior, const int64_t* targets,
                   scalar_t* a, scalar_t* row_max, scalar_t* log_sum, int64_t N, int64_t K, int64_t k, bool transform,
                   scalar_t c, scalar_t kappa) {
  const int64_t m = blockIdx.x;
  const scalar_t* row = logits + m * N;
  detail::OnlineLogSumExp<scalar_t> local;  // over this thread's elements
  for (int64_t j = threadIdx.x; j < N; j += blockDim.x) local.add(component_logit(row[j], transform, c, kappa));
  const auto total = local.block_max_and_log_sum();
  if (threadIdx.x == 0) {
    const int64_t slot = m * K + k;
    row_max[slot] = total.max;
    log_sum[slot] = total.log_sum;
    // A target outside the vocabulary gives NaN (checking the range on the host would cost a sync).
    const int64_t t = targets[m];
    const scalar_t target_logit = t >= 0 && t < N ? component_logit(row[t], transform, c, kappa)
                                                  : static_cast<scalar_t>(NAN);
    a[slot] = log_prior[slot] + ((target_logit - total.max) - total.log_sum);
  }
}

// ∂/∂l = coef·(onehot(t) − exp((z − max) − log_sum))·G'(l), written over l.
// A 2-D grid: rows along y, each row's columns along x. An element's row and column come from
// the grid, not from a 64-bit division of a flat index per element (which cost more than the
// element's own arithmetic at WT2 sizes); the row's four numbers are read once per row.
template <typename scalar_t>
__global__ void backward_kernel(scalar_t* logits, const scalar_t* row_max, const scalar_t* log_sum, const scalar_t* coef,
                                const int64_t* targets, int64_t M, int64_t N, int64_t K, int64_t k,
                                bool transform, scalar_t c, scalar_t kappa) {
  for (int64_t m = blockIdx.y; m < M; m += gridDim.y) {
    const int64_t slot = m * K + k;
    const scalar_t max = row_max[slot], sum = log_sum[slot], weight = coef[slot];
    const int64_t t = targets[m];
    scalar_t* row = logits + m * N;
    for (int64_t j = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; j < N;
         j += static_cast<int64_t>(gridDim.x) * blockDim.x) {
      const scalar_t l = row[j];
      const scalar_t p = detail::exp_of((component_logit(l, transform, c, kappa) - max) - sum);
      scalar_t g = weight * ((j == t ? scalar_t(1) : scalar_t(0)) - p);
      if (transform) g *= detail::gss_transform_slope(l, c, kappa);
      row[j] = g;
    }
  }
}

}  // namespace

template <typename scalar_t>
const char* launch_mixture_component_forward(const scalar_t* logits, const scalar_t* log_prior,
                                             const int64_t* targets, scalar_t* a, scalar_t* row_max,
                                             scalar_t* log_sum, int64_t M, int64_t N, int64_t K,
                                             int64_t k, double c, double kappa, Stream stream) {
  if (M == 0) return nullptr;
  forward_kernel<scalar_t><<<static_cast<unsigned>(M), kRowThreads, 0, stream>>>(
      logits, log_prior, targets, a, row_max, log_sum, N, K, k, kappa != 1.0, static_cast<scalar_t>(c),
      static_cast<scalar_t>(kappa));
  return detail::launch_error();
}

template <typename scalar_t>
const char* launch_mixture_component_backward(scalar_t* logits, const scalar_t* row_max,
                                              const scalar_t* log_sum, const scalar_t* coef,
                                              const int64_t* targets, int64_t M, int64_t N, int64_t K,
                                              int64_t k, double c, double kappa, Stream stream) {
  if (M == 0 || N == 0) return nullptr;
  // Rows beyond the y-dimension's limit are taken by the blocks' loop; a row's columns by at most
  // as many blocks as cover it once.
  constexpr int64_t kMaxGridRows = 65535;
  const dim3 grid(detail::elementwise_blocks(N, kThreads), static_cast<unsigned>(M < kMaxGridRows ? M : kMaxGridRows));
  backward_kernel<scalar_t><<<grid, kThreads, 0, stream>>>(
      logits, row_max, log_sum, coef, targets, M, N, K, k, kappa != 1.0, static_cast<scalar_t>(c),
      static_cast<scalar_t>(kappa));
  return detail::launch_error();
}

template const char* launch_mixture_component_forward<float>(const float*, const float*, const int64_t*,
                                                             float*, float*, float*, int64_t, int64_t,
                                                             int64_t, int64_t, double, double, Stream);
template const char* launch_mixture_component_forward<double>(const double*, const double*, const int64_t*,
                                                              double*, double*, double*, int64_t, int64_t,
                                                              int64_t, int64_t, double, double, Stream);
template const char* launch_mixture_component_backward<float>(float*, const float*, const float*,
                                                              const float*, const int64_t*, int64_t,
                                                              int64_t, int64_t, int64_t, double, double,
                                                              Stream);
template const char* launch_mixture_component_backward<double>(double*, const double*, const double*,
                                                               const double*, const int64_t*, int64_t,
                                                               int64_t, int64_t, int64_t, double, double,
                                                               Stream);

}  // namespace lmkit::ops::cuda
