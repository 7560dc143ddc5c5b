// Argument checks shared by the ops: one message format ("op: what is wrong, got what").
#pragma once
#include <sstream>
#include <string>

#include "runtime/core/error.h"
#include "runtime/core/torch.h"

#define LMKIT_OP_CHECK(cond, message)                     \
  do {                                                    \
    if (!(cond)) throw ::lmkit::UsageError(message);      \
  } while (0)

namespace lmkit::ops {

inline std::string shape_of(const torch::Tensor& t) {
  std::ostringstream s;
  s << t.sizes();
  return s.str();
}

inline void check_floating(const torch::Tensor& t, const char* op, const char* name) {
  LMKIT_OP_CHECK(t.defined(), std::string(op) + ": " + name + " is undefined");
  LMKIT_OP_CHECK(t.scalar_type() == torch::kFloat32 || t.scalar_type() == torch::kFloat64,
                 std::string(op) + ": " + name + " must be float32 or float64, got " +
                     std::string(c10::toString(t.scalar_type())));
}

}  // namespace lmkit::ops
