// Host-side launchers for lmkit's CUDA kernels (ops/cuda/*_kernels.cu).
//
// Plain C++ on purpose: no CUDA and no Torch headers, so that the .cu files depend on nothing but
// <cuda_runtime.h> (they compile with any nvcc, whichever Torch is installed, and are compile-checked
// on machines without a GPU) and ops/cuda/dispatch.cpp can include this without nvcc.
// Pointers are device pointers to contiguous row-major data; every launcher enqueues its work on
// `stream` and returns nullptr on success or CUDA's message for the launch error.
// Each launcher is instantiated for float and double (scalar_t); accumulations are noted per op.
#pragma once
#include <cstddef>
#include <cstdint>

// The runtime's own stream handle type (cudaStream_t is `CUstream_st*`), named without its header.
struct CUstream_st;

namespace lmkit::ops::cuda {

using Stream = CUstream_st*;

// ── gss_log_softmax (ops/gss_log_softmax.h): one block per row of length n ──
// out = z − logsumexp(z), z = k·(l − c) + c − (k − 1)·softplus(l − c).
template <typename scalar_t>
const char* launch_gss_log_softmax_forward(const scalar_t* logits, scalar_t* out, int64_t rows,
                                           int64_t n, double c, double k, Stream stream);
// grad = (g − exp(out)·Σg) · (k − (k − 1)·σ(l − c)).
template <typename scalar_t>
const char* launch_gss_log_softmax_backward(const scalar_t* logits, const scalar_t* out,
                                            const scalar_t* grad_out, scalar_t* grad_logits,
                                            int64_t rows, int64_t n, double c, double k,
                                            Stream stream);

// ── plif (ops/plif.h): K intervals of width w = 2T/K over [−T, T] ──
// out[e] = knots[i] + slopes[i]·(l[e] − (−T + i·w)), i = interval of l[e]; knots and slopes are
// the K knot values and slopes in double.
template <typename scalar_t>
const char* launch_plif_forward(const scalar_t* logits, const double* knots, const double* slopes,
                                scalar_t* out, int64_t n, int64_t K, double T, Stream stream);
// grad_logits[e] = g[e]·slopes[i].
template <typename scalar_t>
const char* launch_plif_backward_logits(const scalar_t* logits, const scalar_t* grad_out,
                                        const double* slopes, scalar_t* grad_logits, int64_t n,
                                        int64_t K, double T, Stream stream);
// Bytes of device scratch that launch_plif_slope_grad needs for n elements and K slopes, written
// to *bytes: O(min(n, 2^24) + K), whatever n is. Returns nullptr or CUDA's message.
const char* plif_slope_grad_scratch_bytes(int64_t n, int64_t K, std::size_t* bytes);
// The K slope gradients (double). The elements are taken in fixed tiles of 2^24; each tile's
// intervals are sorted (a stable radix sort of 32-bit keys over the interval's bits only, 32-bit
// element indices) and every sum runs in a fixed order (element order within fixed chunks, chunks
// in order, tiles in order), so the result is the same bits on every run; no atomics.
template <typename scalar_t>
const char* launch_plif_slope_grad(const scalar_t* logits, const scalar_t* grad_out, void* scratch,
                                   std::size_t scratch_bytes, double* grad_slopes, int64_t n,
                                   int64_t K, double T, Stream stream);

// ── mixture_nll (ops/mixture_nll.h): one component k of K, logits block l [M, N] ──
// Per row m (slot = m·K + k): z = G(l[m]) (G = GSS transform, skipped when kappa = 1),
// row_max[slot] = max z, log_sum[slot] = log Σ exp(z − max), a[slot] = log_prior[slot] +
// (z[t_m] − max) − log_sum. The normalizer stays in two parts: their sum near ±1e3 in float32
// rounds by 1e-4, which the backward's exp(z − lse) would carry. One read of the block.
template <typename scalar_t>
const char* launch_mixture_component_forward(const scalar_t* logits, const scalar_t* log_prior,
                                             const int64_t* targets, scalar_t* a, scalar_t* row_max,
                                             scalar_t* log_sum, int64_t M, int64_t N, int64_t K,
                                             int64_t k, double c, double kappa, Stream stream);
// In place: l[m, j] ← ∂/∂l = coef[slot]·(onehot(t_m)_j − exp((z − row_max[slot]) − log_sum[slot]))·G'(l[m, j]).
template <typename scalar_t>
const char* launch_mixture_component_backward(scalar_t* logits, const scalar_t* row_max,
                                              const scalar_t* log_sum, const scalar_t* coef,
                                              const int64_t* targets, int64_t M, int64_t N, int64_t K,
                                              int64_t k, double c, double kappa, Stream stream);

}  // namespace lmkit::ops::cuda
