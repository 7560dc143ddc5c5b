// Tensors from and to nested lists as scripts write them ({{1, 2}, {3, 4}}). From: checks that the
// nesting is regular and infers the dtype (all booleans → bool, all integers → int64, else float32),
// the way torch.tensor does for Python lists. To: the values laid out for the lists (t:totable()).
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "runtime/core/torch.h"
#include "runtime/tensor/tensor_format.h"  // kMaxNestedListDepth

namespace lmkit {

class NestedListBuilder {
 public:
  void open_list();
  void close_list();
  void add_integer(std::int64_t value);  // exact: a Lua integer keeps all 64 bits
  void add_number(double value);         // a float
  void add_boolean(bool value);

  // The tensor, in `dtype` if given, else the inferred one. Throws UsageError for ragged input, and
  // for a value that does not fit an integer `dtype` (uint8 300, int32 1e300, int64 NaN: PyTorch
  // refuses these too), naming the value, its position and the dtype's range.
  torch::Tensor build(std::optional<torch::ScalarType> dtype = std::nullopt) const;

 private:
  void add_leaf(double value);
  // The path of the element being added, for error messages: "[2][3]".
  std::string path() const;

  std::vector<std::int64_t> shape_;   // sizes fixed by the first list seen at each depth
  std::vector<std::int64_t> counts_;  // elements seen so far in each open list
  std::vector<double> values_;
  // Every value exactly while all of them are integers (or booleans); doubles lose integers past 2^53.
  std::vector<std::int64_t> exact_;
  int depth_ = 0;
  int leaf_depth_ = -1;               // the depth of scalars, fixed by the first one
  bool any_float_ = false, any_integer_ = false, any_boolean_ = false;
  bool closed_root_ = false;
};

// A tensor's values as nested lists hold them: contiguous on the host, as bool, int64 (any integer
// dtype) or float64 (any other). UsageError when it has more dimensions than nested lists may
// (kMaxNestedListDepth), or has no elements but would still make more than 2^24 empty lists: a
// size-0 dimension empties every list above it, yet [2^40, 0] is 2^40 of them, with no data to
// bound them.
torch::Tensor values_for_nested_lists(const torch::Tensor& tensor);

}  // namespace lmkit
