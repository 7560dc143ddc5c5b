// Human-readable tensor text for the REPL and tostring(): Lua brace syntax (so it can be pasted back
// into lmkit.tensor), one shared number format per tensor, summarization of large tensors.
//
//   tensor({{1.0000, 2.5000},
//           {3.0000, 4.0000}}, float32, size 2x2)
#pragma once
#include <cstdint>
#include <string>

#include "runtime/core/torch.h"

namespace lmkit {

// Nested lists and tensors convert at most this many levels deep, both ways: reading them walks
// one level per recursion, and so do t:totable() and the tensor printer, once per dimension (a
// tensor of 100,000 dimensions of size 1 is easy to make and would overflow the C stack).
constexpr int kMaxNestedListDepth = 64;

struct TensorFormatOptions {
  int precision = 4;           // digits after the point (fixed) or in the mantissa (scientific)
  std::int64_t threshold = 1000;  // more elements than this: show edge_items per end of each dim
  std::int64_t edge_items = 3;
  int line_width = 80;
};

std::string format_tensor(const torch::Tensor& tensor, const TensorFormatOptions& options = {});

// "2x3", "0", "" for a 0-d tensor.
std::string format_shape(torch::IntArrayRef sizes);

// "float32", "int64", "bool", ... — the names lmkit's Lua API accepts and prints.
std::string dtype_name(torch::ScalarType type);

// Inverse of dtype_name, accepting the usual aliases ("float", "double", "long", "int", "half").
// Throws UsageError listing the accepted names.
torch::ScalarType parse_dtype(const std::string& name);

}  // namespace lmkit
