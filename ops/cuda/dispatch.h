// The Torch side of lmkit's CUDA kernels (ops/cuda/*_kernels.cu): argument checks, contiguous
// layouts, the current device and stream, and launch errors turned into exceptions. Built only
// with LMKIT_WITH_CUDA, which defines LMKIT_OPS_CUDA; the ops call these for CUDA tensors.
#pragma once
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "runtime/core/torch.h"

namespace lmkit::ops::cuda {

// ops/gss_log_softmax.h. Returns the log-probabilities, contiguous.
torch::Tensor gss_log_softmax_forward(const torch::Tensor& logits, double c, double k);
torch::Tensor gss_log_softmax_backward(const torch::Tensor& logits, const torch::Tensor& out,
                                       const torch::Tensor& grad_out, double c, double k);

// ops/plif.h. knots: the K knot values (any floating type; used in double).
torch::Tensor plif_forward(const torch::Tensor& logits, const torch::Tensor& knots,
                           const torch::Tensor& slopes, double T);
// Returns (∂/∂logits like logits, ∂/∂slopes [K] in double), the latter the same bits on every run.
// ∂/∂logits is written into grad_logits when it is given (contiguous, like logits; it may be
// grad_out itself), else into a new tensor.
std::pair<torch::Tensor, torch::Tensor> plif_backward(const torch::Tensor& logits,
                                                      const torch::Tensor& slopes,
                                                      const torch::Tensor& grad_out, double T,
                                                      torch::Tensor grad_logits = {});

// ops/mixture_nll.h, component k. logits: the block h_k·Eᵀ + b [M, N], contiguous. Fills column k
// of a, row_max and log_sum ([M, K], contiguous, logits' dtype; the normalizer is their sum).
void mixture_component_forward(const torch::Tensor& logits, const torch::Tensor& log_prior,
                               const torch::Tensor& targets, torch::Tensor& a, torch::Tensor& row_max,
                               torch::Tensor& log_sum, int64_t k, double c, double kappa);
// Overwrites the block with ∂/∂logits for component k, given the normalizer's two parts and
// coef = −g·r ([M, K]).
void mixture_component_backward(torch::Tensor& logits, const torch::Tensor& row_max,
                                const torch::Tensor& log_sum, const torch::Tensor& coef,
                                const torch::Tensor& targets, int64_t k, double c, double kappa);

// For ops/kernel_check.h's cuda_device_facts: (name, value) facts of device `index`.
std::vector<std::pair<std::string, std::string>> device_facts(int index);

// For ops/device_memory.h: the caching allocator's byte counts of device `index` (-1: the current one).
struct MemoryCounts {
  int index = 0;
  std::int64_t allocated = 0, peak_allocated = 0, reserved = 0;
};
MemoryCounts memory_counts(int index);
void reset_peak_memory(int index);

}  // namespace lmkit::ops::cuda
