#include "runtime/tensor/tensor_index.h"

#include <string>

#include "runtime/core/error.h"
#include "runtime/core/number_text.h"

namespace lmkit {

using at::indexing::Slice;
using at::indexing::TensorIndex;

IndexSpec IndexSpec::select(std::int64_t index) {
  IndexSpec s;
  s.kind = Kind::Select;
  s.index = index;
  return s;
}

IndexSpec IndexSpec::range(std::int64_t start, std::int64_t stop, std::int64_t step) {
  IndexSpec s;
  s.kind = Kind::Range;
  s.start = start;
  s.stop = stop;
  s.step = step;
  return s;
}

IndexSpec IndexSpec::all() { return IndexSpec{}; }

IndexSpec IndexSpec::of(torch::Tensor tensor) {
  IndexSpec s;
  s.kind = Kind::Tensor;
  s.tensor = std::move(tensor);
  return s;
}

std::int64_t resolve_position(std::int64_t position, std::int64_t size, const char* what) {
  if (position == 0) {
    throw UsageError(std::string(what) + " 0 is invalid: lmkit counts from 1 (and -1 is the last)");
  }
  const std::int64_t zero_based = position > 0 ? position - 1 : size + position;
  if (zero_based < 0 || zero_based >= size) {
    throw UsageError(std::string(what) + " " + integer_text(position) +
                     " is out of range for size " + integer_text(size) + " (valid: 1.." +
                     integer_text(size) + " or -" + integer_text(size) + "..-1)");
  }
  return zero_based;
}

std::int64_t resolve_dim(std::int64_t dim, std::int64_t ndim) {
  if (ndim == 0) {
    throw UsageError("dimension " + integer_text(dim) + " given for a 0-d tensor (it has none)");
  }
  return resolve_position(dim, ndim, "dimension");
}

namespace {

TensorIndex resolve_range(const IndexSpec& spec, std::int64_t size) {
  if (spec.step < 1) {
    throw UsageError("range step must be positive, got " + integer_text(spec.step));
  }
  // As with string.sub, a range may start one past the end or end at 0: both are empty.
  const std::int64_t start =
      spec.start == size + 1 ? size : resolve_position(spec.start, size, "range start");
  if (start == size || spec.stop == 0) return Slice(start, start);
  const std::int64_t stop = resolve_position(spec.stop, size, "range end");
  if (stop < start) return Slice(start, start);
  return Slice(start, stop + 1, spec.step);
}

TensorIndex resolve_tensor(const IndexSpec& spec, torch::IntArrayRef sizes, std::size_t dim,
                           std::size_t& consumed) {
  const auto& t = spec.tensor;
  if (t.scalar_type() == torch::kBool) {
    consumed = static_cast<std::size_t>(t.dim());
    if (dim + consumed > sizes.size()) {
      throw UsageError("boolean mask of " + integer_text(t.dim()) +
                       " dimensions indexes past the tensor's " + integer_text(sizes.size()));
    }
    for (std::size_t i = 0; i < consumed; ++i) {
      if (t.size(i) != sizes[dim + i]) {
        throw UsageError("boolean mask dimension " + integer_text(i + 1) + " has size " +
                         integer_text(t.size(i)) + " but the indexed dimension has " +
                         integer_text(sizes[dim + i]));
      }
    }
    return t;
  }
  if (!torch::isIntegralType(t.scalar_type(), /*includeBool=*/false)) {
    throw UsageError("index tensors must hold integers (1-based) or booleans, got " +
                     std::string(c10::toString(t.scalar_type())));
  }
  consumed = 1;
  const auto size = sizes[dim];
  auto ids = t.to(torch::kInt64);
  if (ids.numel() > 0) {
    const auto lo = ids.min().item<std::int64_t>();
    const auto hi = ids.max().item<std::int64_t>();
    if (lo < -size || hi > size || (ids == 0).any().item<bool>()) {
      throw UsageError("index tensor holds values in [" + integer_text(lo) + ", " +
                       integer_text(hi) + "] but dimension " + integer_text(dim + 1) +
                       " has size " + integer_text(size) +
                       " (valid: 1.." + integer_text(size) + ", or negative from the end; never 0)");
    }
  }
  return torch::where(ids > 0, ids - 1, ids + size);
}

}  // namespace

std::vector<TensorIndex> to_torch_indices(const std::vector<IndexSpec>& specs,
                                          torch::IntArrayRef sizes) {
  std::vector<TensorIndex> indices;
  indices.reserve(specs.size());
  std::size_t dim = 0;
  for (const auto& spec : specs) {
    if (dim >= sizes.size()) {
      throw UsageError("too many indices: " + integer_text(specs.size()) +
                       " given for a tensor of " + integer_text(sizes.size()) + " dimension(s)");
    }
    std::size_t consumed = 1;
    switch (spec.kind) {
      case IndexSpec::Kind::Select:
        indices.emplace_back(resolve_position(spec.index, sizes[dim], "index"));
        break;
      case IndexSpec::Kind::Range:
        indices.push_back(resolve_range(spec, sizes[dim]));
        break;
      case IndexSpec::Kind::All:
        indices.emplace_back(Slice());
        break;
      case IndexSpec::Kind::Tensor:
        indices.push_back(resolve_tensor(spec, sizes, dim, consumed));
        break;
    }
    dim += consumed;
  }
  return indices;
}

torch::Tensor index_tensor(const torch::Tensor& tensor, const std::vector<IndexSpec>& specs) {
  return tensor.index(to_torch_indices(specs, tensor.sizes()));
}

void assign_index(torch::Tensor& tensor, const std::vector<IndexSpec>& specs,
                  const torch::Tensor& value) {
  tensor.index_put_(to_torch_indices(specs, tensor.sizes()), value);
}

}  // namespace lmkit
