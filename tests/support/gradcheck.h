// Finite-difference gradient check for tests (float64): compares the analytic gradient of
// s = Σ w ⊙ f(inputs), w fixed random weights, with central differences in every input element.
#pragma once
#include <functional>
#include <vector>

#include "runtime/core/torch.h"

namespace lmkit::testing {

using TensorFn = std::function<torch::Tensor(const std::vector<torch::Tensor>&)>;

// Largest |analytic − numeric| over all elements of the inputs that require grad.
inline double gradient_error(const TensorFn& f, std::vector<torch::Tensor> inputs, double h = 1e-6) {
  for (auto& x : inputs) {
    if (x.requires_grad()) x.mutable_grad() = torch::Tensor();
  }
  auto out = f(inputs);
  torch::manual_seed(1234);
  const auto weights = torch::randn_like(out).detach();
  (out * weights).sum().backward();
  double worst = 0;
  torch::NoGradGuard no_grad;
  for (auto& x : inputs) {
    if (!x.requires_grad()) continue;
    auto analytic = x.grad().defined() ? x.grad().clone() : torch::zeros_like(x);
    auto flat = x.view({-1});
    auto flat_grad = analytic.view({-1});
    for (int64_t i = 0; i < flat.numel(); ++i) {
      const double keep = flat[i].item<double>();
      flat[i] = keep + h;
      const double up = (f(inputs) * weights).sum().item<double>();
      flat[i] = keep - h;
      const double down = (f(inputs) * weights).sum().item<double>();
      flat[i] = keep;
      worst = std::max(worst, std::abs((up - down) / (2 * h) - flat_grad[i].item<double>()));
    }
  }
  return worst;
}

}  // namespace lmkit::testing
