#include "runtime/tensor/tensor_options.h"

#include "runtime/core/device.h"
#include "runtime/core/error.h"
#include "runtime/core/number_text.h"
#include "runtime/tensor/tensor_format.h"

namespace lmkit {

const config::BoundOptions<ConvertSpec>& declared_options(config::Tag<ConvertSpec>) {
  static const config::BoundOptions<ConvertSpec> options(
      "tensor", {{"dtype", &ConvertSpec::dtype, "\"float32\", \"float64\", \"int64\", \"bool\", ..."},
                 {"device", &ConvertSpec::device, "\"cpu\", \"cuda\" or \"cuda:N\""}});
  return options;
}

const config::BoundOptions<TensorSpec>& declared_options(config::Tag<TensorSpec>) {
  static const config::BoundOptions<TensorSpec> options("tensor", [] {
    auto list = config::lifted(&TensorSpec::convert);
    list.push_back({"requires_grad", &TensorSpec::requires_grad, "record operations on it for autograd"});
    return list;
  }());
  return options;
}

torch::TensorOptions tensor_options(const TensorSpec& spec, torch::TensorOptions defaults) {
  auto result = defaults;
  if (spec.convert.dtype) result = result.dtype(parse_dtype(*spec.convert.dtype));
  if (spec.convert.device) result = result.device(parse_device(*spec.convert.device));
  if (spec.requires_grad) result = result.requires_grad(*spec.requires_grad);
  return result;
}

torch::Tensor evenly_spaced(double start, double stop, std::int64_t steps, const TensorSpec& spec) {
  if (steps < 1) throw UsageError("steps must be at least 1, got " + integer_text(steps));
  // host: unless the script's spec names a device, as lmkit.linspace's options document
  return torch::linspace(start, stop, steps, tensor_options(spec));
}

torch::Tensor convert(const torch::Tensor& tensor, const ConvertSpec& spec) {
  auto result = tensor;
  if (spec.device) result = result.to(parse_device(*spec.device));
  if (spec.dtype) result = result.to(parse_dtype(*spec.dtype));
  return result;
}

}  // namespace lmkit
