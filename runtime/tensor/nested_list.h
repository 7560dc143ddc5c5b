// Builds a tensor from nested lists as they arrive from Lua ({{1, 2}, {3, 4}}): checks that the
// nesting is regular and infers the dtype (all booleans → bool, all integers → int64, else float32),
// the way torch.tensor does for Python lists.
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
  void add_number(double value, bool is_integer);
  void add_boolean(bool value);

  // The tensor, in `dtype` if given, else the inferred one. Throws UsageError for ragged input.
  torch::Tensor build(std::optional<torch::ScalarType> dtype = std::nullopt) const;

 private:
  void add_leaf(double value);
  // The path of the element being added, for error messages: "[2][3]".
  std::string path() const;

  std::vector<std::int64_t> shape_;   // sizes fixed by the first list seen at each depth
  std::vector<std::int64_t> counts_;  // elements seen so far in each open list
  std::vector<double> values_;
  int depth_ = 0;
  int leaf_depth_ = -1;               // the depth of scalars, fixed by the first one
  bool any_float_ = false, any_integer_ = false, any_boolean_ = false;
  bool closed_root_ = false;
};

}  // namespace lmkit
