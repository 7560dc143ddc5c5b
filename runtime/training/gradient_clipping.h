// Gradient-norm clipping (as torch.nn.utils.clip_grad_norm_), kept on the parameters' device: the
// norm is a device scalar, so a training step reads it back together with its loss, once.
#pragma once
#include <vector>

#include "runtime/core/torch.h"

namespace lmkit::training {

// sqrt(Σ ‖∂L/∂p‖²) over the parameters with a gradient, as a float64 scalar on their device; the
// squared norms are added in float64 in parameter order (0 when no parameter has a gradient).
torch::Tensor gradient_norm(const std::vector<torch::Tensor>& params);

// Multiplies every gradient by `coefficient` (clip / (norm + 1e-6) when that is below 1).
void scale_gradients(std::vector<torch::Tensor>& params, double coefficient);

}  // namespace lmkit::training
