// Gradient-norm clipping (as torch.nn.utils.clip_grad_norm_), kept on the parameters' device: the
// norm and the clipping coefficient are device scalars, so a training step never waits for them.
// On a GPU the per-parameter work runs as multi-tensor (foreach) kernels: one launch for all the
// norms, one for the scaling, instead of a few per parameter.
#pragma once
#include <vector>

#include "runtime/core/torch.h"

namespace lmkit::training {

// sqrt(Σ ‖∂L/∂p‖²) over the parameters with a gradient, as a float64 scalar on their device; on
// the CPU the squared norms are added in float64 in parameter order (0 when no parameter has a
// gradient). `squares`, when given, receives each parameter's ‖∂L/∂p‖² [P] in float64 (0 for one
// without a gradient): a non-finite entry names the parameter whose gradient is.
torch::Tensor gradient_norm(const std::vector<torch::Tensor>& params, torch::Tensor* squares = nullptr);

// Multiplies every gradient by `coefficient` (clip / (norm + 1e-6) when that is below 1).
void scale_gradients(std::vector<torch::Tensor>& params, double coefficient);
// The same with the coefficient a scalar tensor on the parameters' device (min(1, clip/(norm + 1e-6))).
void scale_gradients(std::vector<torch::Tensor>& params, const torch::Tensor& coefficient);

// Whether every element of `values` is finite, as a bool scalar on its device (x − x is 0 exactly
// for a finite x and NaN otherwise: two elementwise ops, with kernels on every backend).
torch::Tensor all_finite(const torch::Tensor& values);

// min(1, clip / (norm + 1e-6)) from a device norm, in float64 on its device: the arithmetic of the
// host's double, without reading it.
torch::Tensor clip_coefficient(const torch::Tensor& norm, double clip);

}  // namespace lmkit::training
