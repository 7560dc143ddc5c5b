#include "runtime/training/gradient_clipping.h"

#include <torch/version.h>

namespace lmkit::training {
namespace {

std::vector<torch::Tensor> present_gradients(const std::vector<torch::Tensor>& params) {
  std::vector<torch::Tensor> grads;
  for (const auto& p : params) {
    if (p.grad().defined()) grads.push_back(p.grad());
  }
  return grads;
}

}  // namespace

torch::Tensor gradient_norm(const std::vector<torch::Tensor>& params, torch::Tensor* squares) {
  torch::NoGradGuard no_grad;
  const auto device = params.empty() ? torch::Device(torch::kCPU) : params.front().device();
  const auto float64 = torch::TensorOptions().dtype(torch::kFloat64).device(device);
  const auto grads = present_gradients(params);
  if (grads.empty()) {
    if (squares != nullptr) *squares = torch::zeros({static_cast<int64_t>(params.size())}, float64);
    return torch::zeros({}, float64);
  }
  std::vector<torch::Tensor> per_parameter;
  if (device.is_cuda()) {
    // One multi-tensor kernel for every norm (float32 norms, squared in float64).
    auto norms = at::_foreach_norm(grads, 2);
    auto present = torch::stack(norms).to(torch::kFloat64).pow_(2);
    torch::Tensor total = present.sum();
    if (squares != nullptr) {
      std::size_t next = 0;
      for (const auto& p : params) {
        per_parameter.push_back(p.grad().defined() ? present[static_cast<int64_t>(next++)] : torch::zeros({}, float64));
      }
      *squares = torch::stack(per_parameter);
    }
    return total.sqrt_();
  }
  torch::Tensor total;
  for (const auto& p : params) {
    if (!p.grad().defined()) {
      if (squares != nullptr) per_parameter.push_back(torch::zeros({}, float64));
      continue;
    }
    const auto square = p.grad().pow(2).sum().to(torch::kFloat64);
    if (squares != nullptr) per_parameter.push_back(square);
    total = total.defined() ? total + square : square;
  }
  if (squares != nullptr) *squares = torch::stack(per_parameter);
  return total.sqrt();
}

void scale_gradients(std::vector<torch::Tensor>& params, double coefficient) {
  torch::NoGradGuard no_grad;
  for (auto& p : params) {
    if (p.grad().defined()) p.mutable_grad().mul_(coefficient);
  }
}

void scale_gradients(std::vector<torch::Tensor>& params, const torch::Tensor& coefficient) {
  torch::NoGradGuard no_grad;
  auto grads = present_gradients(params);
  if (grads.empty()) return;
#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 1)
  if (coefficient.is_cuda()) {
    // One launch for all (Torch ≥ 2.1 takes a scalar tensor; its fast path wants the gradients'
    // dtype — the float32 product is the same, since a float64 scalar is rounded to float32 anyway).
    at::_foreach_mul_(grads, coefficient.to(grads.front().scalar_type()));
    return;
  }
#endif
  for (auto& g : grads) g.mul_(coefficient);
}

torch::Tensor all_finite(const torch::Tensor& values) { return values.sub(values).eq(0).all(); }

torch::Tensor clip_coefficient(const torch::Tensor& norm, double clip) {
  return torch::full({}, clip, norm.options().dtype(torch::kFloat64)).div_(norm + 1e-6).clamp_max_(1.0);
}

}  // namespace lmkit::training
