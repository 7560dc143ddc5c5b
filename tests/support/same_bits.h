// Whether two tensors hold the same bits. torch::equal calls −0 and +0 equal (and NaN unequal to
// itself); a result that must be another's bit for bit is compared by its bit patterns.
#pragma once
#include "runtime/core/torch.h"

namespace lmkit::testing {

inline bool same_bits(const torch::Tensor& a, const torch::Tensor& b) {
  if (a.scalar_type() != b.scalar_type() || a.sizes() != b.sizes()) return false;
  const auto as_integers = [](const torch::Tensor& t) {
    const auto c = t.detach().to(torch::kCPU).contiguous();
    switch (c.element_size()) {
      case 8: return c.view(torch::kInt64);
      case 4: return c.view(torch::kInt32);
      case 2: return c.view(torch::kInt16);
      default: return c.view(torch::kUInt8);
    }
  };
  return torch::equal(as_integers(a), as_integers(b));
}

}  // namespace lmkit::testing
