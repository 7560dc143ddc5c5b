#include "ops/dropout.h"

#include <fmt/format.h>

#include "runtime/core/error.h"

namespace lmkit {

torch::Tensor locked_dropout(const torch::Tensor& x, double p, bool training) {
  if (!training || p == 0.0) return x;
  if (!(p >= 0.0 && p < 1.0)) throw UsageError(fmt::format("dropout probability must be in [0, 1), got {}", p));
  auto mask_shape = x.sizes().vec();
  if (x.dim() == 3) mask_shape[0] = 1;
  auto mask = torch::empty(mask_shape, x.options()).bernoulli_(1.0 - p).div_(1.0 - p);
  return x * mask;
}

torch::Tensor embedding_dropout(const torch::Tensor& weight, const torch::Tensor& ids, double p, bool training) {
  auto rows = torch::embedding(weight, ids);
  if (!training || p == 0.0) return rows;
  if (!(p >= 0.0 && p < 1.0)) throw UsageError(fmt::format("dropoute must be in [0, 1), got {}", p));
  auto keep = torch::empty({weight.size(0)}, weight.options()).bernoulli_(1.0 - p).div_(1.0 - p);
  return rows * keep.index({ids}).unsqueeze(-1);
}

}  // namespace lmkit
