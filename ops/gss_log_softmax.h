// Fused Generalized-SigSoftmax transform + log-softmax (thesis §4.2.2, eq. 4.16; conference paper eq. 3).
//
//   z = k·(l − c) + c − (k − 1)·softplus(l − c)          (smooth two-piece linear PL̃(l; c, k))
//   out = z − logsumexp(z)                              along the last dimension
//
// GSS(0, 2) is SigSoftmax (log_softmax(2l − softplus(l))), GSS(c, 1) is Softmax.
// Shapes: logits [..., N] (float32/float64) → log-probabilities [..., N].
// Backward (hand-written): with p = exp(out) and G = Σ_j g_j,
//   ∂L/∂l_i = (g_i − p_i·G) · (k − (k − 1)·σ(l_i − c)),
// so only the logits and the output are kept for it (no z, no softplus buffer).
// The CPU kernel computes each row in three passes over memory with no temporaries; the CUDA kernel
// (ops/cuda/gss_log_softmax_kernels.cu, built with LMKIT_WITH_CUDA) does one block per row in two
// passes; other devices, and CUDA in builds without it, use the composed ATen expression.
#pragma once
#include "runtime/core/torch.h"

namespace lmkit::ops {

torch::Tensor gss_log_softmax(const torch::Tensor& logits, double c, double k);

// The pointwise transform alone (autograd through ATen): the reference the op is tested against,
// and what MoSS components use inside the mixture NLL.
torch::Tensor gss_transform(const torch::Tensor& logits, double c, double k);

}  // namespace lmkit::ops
