// PLIF: the learnable piecewise linear increasing function of LMS-PLIF (Ganea et al. 2019; thesis §3.1.4).
//
// K equal intervals of [−T, T] with knots k_i = −T + i·w, w = 2T/K, slopes s_i > 0 (i = 0..K−1):
//   f(l) = y_i + s_i·(l − k_i)   for l in [k_i, k_{i+1}],   i = clamp(⌊(l + T)/w⌋, 0, K − 1)
//   y_0 = −T·s_0 (the thesis's b_0 = 0),   y_i = y_0 + w·Σ_{j<i} s_j     (continuity)
// Outside [−T, T] the end pieces extend with slopes s_0 and s_{K−1}. With all slopes 1, f(l) = l.
// Shapes: logits [...] (float32/float64), slopes [K] → [...] like logits.
// Forward is a gather of knot values plus slope·offset. Backward:
//   ∂f/∂l = s_i;   ∂f/∂s_j = −T·[j = 0] + w·[j < i] + (l − k_i)·[j = i].
// The K slope gradients are a segment reduction over every logit: the CPU kernel accumulates
// per-interval sums (Σ g·offset, Σ g) in double in one sequential pass, then a suffix sum — the
// same result on every run (no atomics). The CUDA kernels (ops/cuda/plif_kernels.cu, built with
// LMKIT_WITH_CUDA) sort the logits by interval (stable) and sum each interval in a fixed order, in
// double: also the same bits on every run, though not the CPU's bits. Other devices, and CUDA in
// builds without the kernels, use index_add (not deterministic on GPUs).
#pragma once
#include "runtime/core/torch.h"

namespace lmkit::ops {

torch::Tensor plif(const torch::Tensor& logits, const torch::Tensor& slopes, double T);

// The LMS-PLIF head's loss: −log_softmax(plif(logits))[m, targets[m]] for each row m of logits
// [M, N] (targets: M int64 ids). With the op's kernels it holds one full-size tensor in forward
// and in backward (f(l) is computed again there; l and the rows' log-sum-exp are saved), the
// memory of Softmax's loss; the composition through plif() and log_softmax holds four.
torch::Tensor plif_nll(const torch::Tensor& logits, const torch::Tensor& slopes, const torch::Tensor& targets,
                       double T);

// The same function composed from ATen ops (autograd through gather/cumsum): the test reference.
torch::Tensor plif_reference(const torch::Tensor& logits, const torch::Tensor& slopes, double T);

}  // namespace lmkit::ops
