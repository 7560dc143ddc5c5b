#include "runtime/tensor/tensor_format.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <vector>

#include "runtime/core/error.h"
#include "runtime/core/number_text.h"

namespace lmkit {
namespace {

struct DtypeName {
  const char* name;
  torch::ScalarType type;
};

// The first name of each type is the canonical one (printed); the rest are accepted aliases.
const DtypeName kDtypeNames[] = {
    {"float32", torch::kFloat32}, {"float64", torch::kFloat64}, {"float16", torch::kFloat16},
    {"bfloat16", torch::kBFloat16}, {"int64", torch::kInt64},   {"int32", torch::kInt32},
    {"int16", torch::kInt16},     {"int8", torch::kInt8},       {"uint8", torch::kUInt8},
    {"bool", torch::kBool},       {"float", torch::kFloat32},   {"double", torch::kFloat64},
    {"half", torch::kFloat16},    {"long", torch::kInt64},      {"int", torch::kInt32},
};

// Keeps `edge` entries at each end of every dimension longer than 2*edge.
torch::Tensor summarize(torch::Tensor t, std::int64_t edge, std::vector<bool>& cut) {
  cut.assign(t.dim(), false);
  for (std::int64_t d = 0; d < t.dim(); ++d) {
    const auto n = t.size(d);
    if (n > 2 * edge) {
      t = torch::cat({t.narrow(d, 0, edge), t.narrow(d, n - edge, edge)}, d);
      cut[d] = true;
    }
  }
  return t;
}

std::vector<std::string> format_floats(const torch::Tensor& shown, int precision) {
  auto values = shown.to(torch::kFloat64).contiguous();
  const double* data = values.data_ptr<double>();
  const auto n = values.numel();
  double max_abs = 0.0, min_abs = INFINITY;
  bool all_integral = true;
  for (std::int64_t i = 0; i < n; ++i) {
    const double v = data[i];
    if (!std::isfinite(v)) continue;
    const double a = std::fabs(v);
    max_abs = std::max(max_abs, a);
    if (a > 0) min_abs = std::min(min_abs, a);
    if (v != std::nearbyint(v)) all_integral = false;
  }
  if (!std::isfinite(min_abs)) min_abs = max_abs;
  bool scientific;
  if (all_integral) {
    scientific = max_abs > 1e8;
  } else {
    scientific = max_abs > 1e8 || min_abs < 1e-4 || (min_abs > 0 && max_abs / min_abs > 1e3);
  }
  std::vector<std::string> out(n);
  char buf[64];
  for (std::int64_t i = 0; i < n; ++i) {
    const double v = data[i];
    if (std::isnan(v)) {
      out[i] = "nan";
    } else if (std::isinf(v)) {
      out[i] = v > 0 ? "inf" : "-inf";
    } else if (scientific) {
      std::snprintf(buf, sizeof buf, "%.*e", precision, v);
      out[i] = buf;
    } else if (all_integral) {
      std::snprintf(buf, sizeof buf, "%.0f.", v);
      out[i] = buf;
    } else {
      std::snprintf(buf, sizeof buf, "%.*f", precision, v);
      out[i] = buf;
    }
  }
  return out;
}

std::vector<std::string> format_elements(const torch::Tensor& shown, int precision) {
  const auto type = shown.scalar_type();
  if (type == torch::kBool) {
    auto values = shown.contiguous();
    const bool* data = values.data_ptr<bool>();
    std::vector<std::string> out(values.numel());
    for (std::int64_t i = 0; i < values.numel(); ++i) out[i] = data[i] ? "true" : "false";
    return out;
  }
  if (torch::isIntegralType(type, /*includeBool=*/false)) {
    auto values = shown.to(torch::kInt64).contiguous();
    const std::int64_t* data = values.data_ptr<std::int64_t>();
    std::vector<std::string> out(values.numel());
    for (std::int64_t i = 0; i < values.numel(); ++i) out[i] = integer_text(data[i]);
    return out;
  }
  if (torch::isFloatingType(type)) return format_floats(shown, precision);
  throw UsageError("cannot format a tensor of dtype " + std::string(c10::toString(type)));
}

class BracePrinter {
 public:
  BracePrinter(const std::vector<std::string>& cells, torch::IntArrayRef sizes,
               const std::vector<bool>& cut, std::int64_t edge, int line_width, int indent)
      : cells_(cells), sizes_(sizes.vec()), cut_(cut), edge_(edge), line_width_(line_width),
        indent_(indent) {
    for (const auto& c : cells_) width_ = std::max(width_, c.size());
    strides_.assign(sizes_.size(), 1);
    for (int d = static_cast<int>(sizes_.size()) - 2; d >= 0; --d)
      strides_[d] = strides_[d + 1] * sizes_[d + 1];
  }

  std::string print() {
    out_.clear();
    emit(0, 0);
    return out_;
  }

 private:
  std::string cell(std::int64_t i) const {
    const auto& c = cells_[i];
    return std::string(width_ - c.size(), ' ') + c;
  }

  void emit(std::size_t dim, std::int64_t base) {
    const int column = indent_ + static_cast<int>(dim) + 1;  // where this level's items start
    out_ += '{';
    const auto n = sizes_[dim];
    if (dim + 1 == sizes_.size()) {
      int used = column;
      for (std::int64_t i = 0; i < n; ++i) {
        std::string item = cell(base + i);
        if (cut_[dim] && i == edge_) item = "..., " + item;
        if (i > 0) {
          out_ += ',';
          if (used + 2 + static_cast<int>(item.size()) > line_width_) {
            out_ += '\n' + std::string(column, ' ');
            used = column;
          } else {
            out_ += ' ';
            used += 2;
          }
        }
        out_ += item;
        used += static_cast<int>(item.size());
      }
    } else {
      const std::string separator =
          ",\n" + std::string(sizes_.size() - dim - 2, '\n') + std::string(column, ' ');
      for (std::int64_t i = 0; i < n; ++i) {
        if (i > 0) out_ += separator;
        if (cut_[dim] && i == edge_) out_ += "..." + separator;
        emit(dim + 1, base + i * strides_[dim]);
      }
    }
    out_ += '}';
  }

  const std::vector<std::string>& cells_;
  std::vector<std::int64_t> sizes_;
  std::vector<std::int64_t> strides_;
  const std::vector<bool>& cut_;
  std::int64_t edge_;
  int line_width_;
  int indent_;
  std::size_t width_ = 0;
  std::string out_;
};

}  // namespace

std::string format_shape(torch::IntArrayRef sizes) {
  std::string s;
  for (std::size_t i = 0; i < sizes.size(); ++i) {
    if (i) s += 'x';
    s += integer_text(sizes[i]);
  }
  return s;
}

std::string dtype_name(torch::ScalarType type) {
  for (const auto& entry : kDtypeNames)
    if (entry.type == type) return entry.name;
  return c10::toString(type);
}

torch::ScalarType parse_dtype(const std::string& name) {
  for (const auto& entry : kDtypeNames)
    if (name == entry.name) return entry.type;
  std::string accepted;
  for (const auto& entry : kDtypeNames) accepted += std::string(accepted.empty() ? "" : ", ") + entry.name;
  throw UsageError("unknown dtype '" + name + "' (accepted: " + accepted + ")");
}

std::string format_tensor(const torch::Tensor& tensor, const TensorFormatOptions& options) {
  if (!tensor.defined()) return "tensor(undefined)";
  const std::string prefix = "tensor(";
  std::string body;
  auto cpu = tensor.detach().to(torch::kCPU);
  if (cpu.dim() == 0) {
    body = format_elements(cpu, options.precision).front();
  } else if (cpu.numel() == 0) {
    body = "{}";
  } else if (cpu.dim() > kMaxNestedListDepth) {
    body = "{... " + integer_text(cpu.dim()) + " dimensions: too many to print ...}";
  } else {
    std::vector<bool> cut(cpu.dim(), false);
    auto shown = cpu.numel() > options.threshold ? summarize(cpu, options.edge_items, cut) : cpu;
    const auto cells = format_elements(shown, options.precision);
    body = BracePrinter(cells, shown.sizes(), cut, options.edge_items, options.line_width,
                        static_cast<int>(prefix.size()))
               .print();
  }
  std::string suffix = ", " + dtype_name(tensor.scalar_type());
  if (tensor.dim() > 0) suffix += ", size " + format_shape(tensor.sizes());
  if (!tensor.device().is_cpu()) suffix += ", " + tensor.device().str();
  if (tensor.grad_fn()) {
    suffix += ", grad_fn=" + tensor.grad_fn()->name();
  } else if (tensor.requires_grad()) {
    suffix += ", requires_grad=true";
  }
  return prefix + body + suffix + ")";
}

}  // namespace lmkit
