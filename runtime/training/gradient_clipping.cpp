#include "runtime/training/gradient_clipping.h"

namespace lmkit::training {

torch::Tensor gradient_norm(const std::vector<torch::Tensor>& params) {
  torch::NoGradGuard no_grad;
  torch::Tensor total;
  for (const auto& p : params) {
    if (!p.grad().defined()) continue;
    const auto square = p.grad().pow(2).sum().to(torch::kFloat64);
    total = total.defined() ? total + square : square;
  }
  if (!total.defined()) {
    const auto device = params.empty() ? torch::Device(torch::kCPU) : params.front().device();
    return torch::zeros({}, torch::TensorOptions().dtype(torch::kFloat64).device(device));
  }
  return total.sqrt();
}

void scale_gradients(std::vector<torch::Tensor>& params, double coefficient) {
  torch::NoGradGuard no_grad;
  for (auto& p : params) {
    if (p.grad().defined()) p.mutable_grad().mul_(coefficient);
  }
}

}  // namespace lmkit::training
