// Size arithmetic that cannot overflow: sizes from a config are checked against memory before
// anything is allocated, and a product past 2^63 must read as "too large", not wrap.
#pragma once
#include <cstdint>
#include <limits>

namespace lmkit {

// a·b + c, saturating at the largest int64 (sizes here are positive).
inline std::int64_t saturating_multiply_add(std::int64_t a, std::int64_t b, std::int64_t c) {
  std::int64_t product = 0, sum = 0;
  if (__builtin_mul_overflow(a, b, &product) || __builtin_add_overflow(product, c, &sum)) {
    return std::numeric_limits<std::int64_t>::max();
  }
  return sum;
}

}  // namespace lmkit
