// Lua-facing tensor indexing: 1-based, inclusive ranges, negative indices counting from the end
// (-1 is the last). Converted here — and only here — to Torch's 0-based, half-open indexing.
//
//   Lua                      meaning                            IndexSpec
//   t[2]                     select row 2 (dimension removed)   select(2)
//   t[{2, {1, 3}}]           row 2, columns 1..3                select(2), range(1, 3)
//   t[{{}, -1}]              last column of every row           all(), select(-1)
//   t[{{2}}]                 rows 2..end                        range(2, -1)
//   t[mask] / t[indices]     boolean mask / 1-based int64 ids   tensor(mask) / tensor(ids)
#pragma once
#include <cstdint>
#include <vector>

#include "runtime/core/torch.h"

namespace lmkit {

struct IndexSpec {
  enum class Kind { Select, Range, All, Tensor };
  Kind kind = Kind::All;
  std::int64_t index = 0;                      // Select
  std::int64_t start = 1, stop = -1, step = 1;  // Range, both ends inclusive
  torch::Tensor tensor;                        // Tensor: bool mask or 1-based int64 indices

  static IndexSpec select(std::int64_t index);
  static IndexSpec range(std::int64_t start, std::int64_t stop = -1, std::int64_t step = 1);
  static IndexSpec all();
  static IndexSpec of(torch::Tensor tensor);
};

// A 1-based (negative from the end) position in [1, size] to its 0-based offset; throws
// UsageError naming `what` (e.g. "index", "dimension") when out of range.
std::int64_t resolve_position(std::int64_t position, std::int64_t size, const char* what);

// A 1-based dimension of a tensor with `ndim` dimensions to 0-based.
std::int64_t resolve_dim(std::int64_t dim, std::int64_t ndim);

// Torch indices for `specs` applied to a tensor of shape `sizes` (bounds checked).
std::vector<at::indexing::TensorIndex> to_torch_indices(const std::vector<IndexSpec>& specs,
                                                        torch::IntArrayRef sizes);

// t[specs] (a view where Torch gives one) and t[specs] = value (in place, broadcasting value).
torch::Tensor index_tensor(const torch::Tensor& tensor, const std::vector<IndexSpec>& specs);
void assign_index(torch::Tensor& tensor, const std::vector<IndexSpec>& specs,
                  const torch::Tensor& value);

// Converts 0-based index results of Torch (argmax, sort, topk) to lmkit's 1-based ones and back.
inline torch::Tensor to_lua_indices(const torch::Tensor& zero_based) { return zero_based + 1; }

}  // namespace lmkit
