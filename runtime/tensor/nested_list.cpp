#include "runtime/tensor/nested_list.h"

#include <cmath>
#include <limits>
#include <utility>

#include "runtime/core/error.h"
#include "runtime/core/number_text.h"

namespace lmkit {

std::string NestedListBuilder::path() const {
  std::string p;
  for (auto c : counts_) p += "[" + integer_text(c + 1) + "]";
  return p.empty() ? "the top level" : "element " + p;
}

void NestedListBuilder::open_list() {
  if (closed_root_) throw UsageError("nested list: data after the outermost list was closed");
  if (leaf_depth_ >= 0 && depth_ >= leaf_depth_) {
    throw UsageError("nested list is ragged: " + path() + " is a list where numbers were found before");
  }
  if (depth_ > 0) ++counts_.back();
  ++depth_;
  counts_.push_back(0);
  if (static_cast<int>(shape_.size()) < depth_) shape_.push_back(-1);
}

void NestedListBuilder::close_list() {
  if (depth_ == 0) throw UsageError("nested list: close without open");
  auto& expected = shape_[depth_ - 1];
  const auto got = counts_.back();
  if (expected < 0) {
    expected = got;
  } else if (expected != got) {
    counts_.pop_back();
    throw UsageError("nested list is ragged: a list at depth " + integer_text(depth_) + " has " +
                     integer_text(got) + " elements where an earlier one had " +
                     integer_text(expected));
  }
  // An empty list fixes no leaf depth, so {{}, {}} is a 2x0 tensor.
  counts_.pop_back();
  --depth_;
  if (depth_ == 0) closed_root_ = true;
}

void NestedListBuilder::add_leaf(double value) {
  if (leaf_depth_ < 0) {
    leaf_depth_ = depth_;
  } else if (leaf_depth_ != depth_) {
    throw UsageError("nested list is ragged: " + path() + " holds a number at depth " +
                     integer_text(depth_) + " where lists were found before");
  }
  if (depth_ > 0) ++counts_.back();
  values_.push_back(value);
}

void NestedListBuilder::add_integer(std::int64_t value) {
  add_leaf(static_cast<double>(value));
  if (!any_float_) exact_.push_back(value);
  any_integer_ = true;
}

void NestedListBuilder::add_number(double value) {
  add_leaf(value);
  any_float_ = true;
  exact_.clear();
  exact_.shrink_to_fit();
}

void NestedListBuilder::add_boolean(bool value) {
  add_leaf(value ? 1.0 : 0.0);
  if (!any_float_) exact_.push_back(value ? 1 : 0);
  any_boolean_ = true;
}

namespace {

// The range of an integer dtype as [low, high] in int64 (uint64 is not a Torch dtype).
std::pair<std::int64_t, std::int64_t> integer_range(torch::ScalarType dtype) {
  switch (dtype) {
    case torch::kUInt8: return {0, 255};
    case torch::kInt8: return {-128, 127};
    case torch::kInt16: return {-32768, 32767};
    case torch::kInt32: return {std::numeric_limits<std::int32_t>::min(), std::numeric_limits<std::int32_t>::max()};
    default: return {std::numeric_limits<std::int64_t>::min(), std::numeric_limits<std::int64_t>::max()};
  }
}

[[noreturn]] void does_not_fit(const std::string& value, std::size_t index, torch::ScalarType dtype) {
  const auto [low, high] = integer_range(dtype);
  throw UsageError("the value " + value + " (element " + integer_text(static_cast<std::int64_t>(index) + 1) +
                   " in reading order) does not fit dtype " + dtype_name(dtype) + " (" +
                   integer_text(low) + " to " + integer_text(high) +
                   "); nothing is wrapped or clamped: choose a wider dtype, or change the value");
}

}  // namespace

torch::Tensor NestedListBuilder::build(std::optional<torch::ScalarType> dtype) const {
  if (depth_ != 0) throw UsageError("nested list: unclosed list");
  if (any_boolean_ && (any_integer_ || any_float_)) {
    throw UsageError("nested list mixes booleans and numbers; convert one of them first");
  }
  std::vector<std::int64_t> sizes;
  if (leaf_depth_ < 0) {
    sizes = shape_;  // no scalars at all: every list empty, e.g. {} or {{}, {}}
  } else {
    sizes.assign(shape_.begin(), shape_.begin() + leaf_depth_);
  }
  torch::ScalarType inferred = any_boolean_ ? torch::kBool
                               : any_float_ ? torch::kFloat32
                               : any_integer_ ? torch::kInt64
                                              : torch::kFloat32;
  const auto target = dtype.value_or(inferred);
  const bool integer_target = torch::isIntegralType(target, /*includeBool=*/false);
  if (!any_float_) {
    // Integers (and booleans) exactly: int64 first, then the dtype asked for, each value checked.
    if (integer_target) {
      const auto [low, high] = integer_range(target);
      for (std::size_t i = 0; i < exact_.size(); ++i) {
        if (exact_[i] < low || exact_[i] > high) does_not_fit(integer_text(exact_[i]), i, target);
      }
    }
    // host: the values came from Lua tables; lmkit.tensor moves the result to the device asked for
    return torch::tensor(exact_, torch::kInt64).reshape(sizes).to(target);
  }
  if (integer_target) {
    // A float becomes an integer by truncation toward 0 (as torch.tensor does); it must be finite
    // and land inside the dtype's range.
    const auto [low, high] = integer_range(target);
    for (std::size_t i = 0; i < values_.size(); ++i) {
      const double v = values_[i];
      // int64's limits as doubles are −2^63 (exact) and 2^63 (one past); the smaller dtypes' are exact.
      const bool fits = target == torch::kInt64
                            ? v >= -9223372036854775808.0 && v < 9223372036854775808.0
                            : v > static_cast<double>(low) - 1.0 && v < static_cast<double>(high) + 1.0;
      if (!std::isfinite(v) || !fits) does_not_fit(describe_number(v), i, target);
    }
  }
  // host: the values came from Lua tables; lmkit.tensor moves the result to the device asked for
  return torch::tensor(values_, torch::kFloat64).reshape(sizes).to(target);
}

namespace {

constexpr std::int64_t kMaxEmptyLists = std::int64_t{1} << 24;

// 1 + s0 + s0·s1 + ... up to the last dimension: the lists a nested conversion builds (saturating).
std::int64_t nested_list_count(torch::IntArrayRef sizes) {
  constexpr auto kMax = std::numeric_limits<std::int64_t>::max();
  std::int64_t lists = 1, prefix = 1;
  for (std::size_t d = 0; d + 1 < sizes.size(); ++d) {
    if (__builtin_mul_overflow(prefix, sizes[d], &prefix) || __builtin_add_overflow(lists, prefix, &lists)) return kMax;
    if (prefix == 0) break;
  }
  return lists;
}

}  // namespace

torch::Tensor values_for_nested_lists(const torch::Tensor& tensor) {
  if (tensor.dim() > kMaxNestedListDepth) {
    throw UsageError("a tensor of " + integer_text(tensor.dim()) + " dimensions does not become nested tables (at most " +
                     integer_text(kMaxNestedListDepth) + " levels, as lmkit.tensor reads them)");
  }
  if (tensor.numel() == 0) {
    const auto lists = nested_list_count(tensor.sizes());
    if (lists > kMaxEmptyLists) {
      throw UsageError("a tensor of size " + format_shape(tensor.sizes()) + " has no elements but would become " +
                       integer_text(lists) + " nested empty tables (at most " + integer_text(kMaxEmptyLists) + ")");
    }
  }
  auto t = tensor.detach().to(torch::kCPU);
  if (t.scalar_type() == torch::kBool) return t.contiguous();
  return t.to(torch::isIntegralType(t.scalar_type(), false) ? torch::kInt64 : torch::kFloat64).contiguous();
}

}  // namespace lmkit
