// Negative log-likelihood of a mixture of softmaxes without the M×K×N probability tensor
// (MoS: Yang et al. 2018, "Breaking the Softmax Bottleneck"; MoSS: SigSoftmax components).
//
// For context m with target t, component k (latent h_mk, log prior log π_mk):
//   z_mk = G(h_mk·Eᵀ + b)                       [N]   G = GSS transform (c, kappa); kappa = 1: identity
//   a_mk = log π_mk + z_mk[t] − logsumexp(z_mk)        (log of π_k·softmax(z_mk)[t])
//   nll_m = −logsumexp_k a_mk
// Forward walks the K components one [M, N] block at a time, keeping only a [M, K] and each
// normalizer lse = max + log Σ exp(z − max) as its two parts [M, K] (their float32 sum at logits of
// ±1e3 rounds by 1e-4, which p = exp(z − lse) would carry). Backward, with responsibilities
// r = softmax_k(a) and upstream g [M]:
//   ∂/∂log π_mk = −g_m·r_mk
//   ∂/∂z_mk     = −g_m·r_mk·(onehot(t) − exp((z_mk − max_mk) − log_sum_mk))  (block by block)
//   ∂/∂l_mk     = ∂/∂z_mk · (kappa − (kappa − 1)·σ(l_mk − c))
// and the usual products for h, E and b. Peak extra memory: two [M, N] blocks.
// Shapes: latent [M, K, d], log_prior [M, K], weight [N, d], bias [N] (or undefined),
// targets [M] int64 → nll [M].
// Written with ATen ops, so it runs on any device. On CUDA (ops/cuda/mixture_nll_kernels.cu, built
// with LMKIT_WITH_CUDA) the GEMMs stay with cuBLAS and one kernel per component replaces the
// elementwise work on each block: transform + logsumexp + gather forward, ∂/∂l in place backward.
#pragma once
#include "runtime/core/torch.h"

namespace lmkit::ops {

torch::Tensor mixture_nll(const torch::Tensor& latent, const torch::Tensor& log_prior,
                          const torch::Tensor& weight, const torch::Tensor& bias,
                          const torch::Tensor& targets, double c = 0.0, double kappa = 1.0);

// Full log-probabilities log Σ_k π_k softmax(z_k) [M, N], accumulated component by component
// with logaddexp (autograd through ATen): for analysis and as the test reference.
torch::Tensor mixture_log_probs(const torch::Tensor& latent, const torch::Tensor& log_prior,
                                const torch::Tensor& weight, const torch::Tensor& bias,
                                double c = 0.0, double kappa = 1.0);

}  // namespace lmkit::ops
