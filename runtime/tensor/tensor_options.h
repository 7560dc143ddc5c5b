// How a tensor is made or converted, as a script names it: {dtype = "float64", device = "cuda",
// requires_grad = true}; nil keeps the default (tensor_options' `defaults`).
#pragma once
#include <optional>
#include <string>

#include "runtime/config/bound_options.h"
#include "runtime/core/torch.h"

namespace lmkit {

struct ConvertSpec {
  std::optional<std::string> dtype;   // a dtype name (tensor_format.h's parse_dtype)
  std::optional<std::string> device;  // "cpu", "cuda", "cuda:N"
};
const config::BoundOptions<ConvertSpec>& declared_options(config::Tag<ConvertSpec>);

struct TensorSpec {
  ConvertSpec convert;
  std::optional<bool> requires_grad;
};
const config::BoundOptions<TensorSpec>& declared_options(config::Tag<TensorSpec>);

torch::TensorOptions tensor_options(const TensorSpec& spec, torch::TensorOptions defaults = {});
// `steps` evenly spaced values from start to stop inclusive (lmkit.linspace).
torch::Tensor evenly_spaced(double start, double stop, std::int64_t steps, const TensorSpec& spec);
// `tensor` converted (to the device first, then the dtype).
torch::Tensor convert(const torch::Tensor& tensor, const ConvertSpec& spec);

}  // namespace lmkit
