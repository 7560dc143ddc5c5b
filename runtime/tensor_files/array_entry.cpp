#include "runtime/tensor_files/array_entry.h"

#include <algorithm>
#include <array>
#include <cstring>

#include "runtime/core/error.h"
#include "runtime/core/number_text.h"

namespace lmkit::tensor_files {

std::uint64_t checked_byte_count(const std::vector<std::int64_t>& shape, torch::ScalarType dtype, const std::string& where) {
  std::int64_t count = static_cast<std::int64_t>(c10::elementSize(dtype));
  // Torch's strides multiply the sizes other than 0 too: [0, 2^62, 2^62] holds no byte but has no
  // strides either.
  std::int64_t strided = count;
  for (const auto size : shape) {
    if (size < 0) throw EnvironmentError(where + " has a negative size (" + integer_text(size) + ")");
    if (__builtin_mul_overflow(count, size, &count) || __builtin_mul_overflow(strided, std::max<std::int64_t>(size, 1), &strided)) {
      throw EnvironmentError(where + " claims an array too large for any file (its sizes multiply past 2^63 bytes)");
    }
  }
  return static_cast<std::uint64_t>(count);
}

torch::Tensor tensor_of(const ArrayEntry& entry) {
  auto shape = entry.shape;
  if (entry.fortran_order) std::reverse(shape.begin(), shape.end());
  auto tensor = tensor_from_bytes(entry.data.substr(0, entry.byte_count), shape, entry.dtype);
  if (!entry.fortran_order || tensor.dim() < 2) return tensor;
  std::vector<std::int64_t> reversed(static_cast<std::size_t>(tensor.dim()));
  for (std::int64_t d = 0; d < tensor.dim(); ++d) reversed[static_cast<std::size_t>(d)] = tensor.dim() - 1 - d;
  return tensor.permute(reversed).contiguous();
}

torch::Tensor tensor_from_bytes(std::string_view bytes, const std::vector<std::int64_t>& shape, torch::ScalarType dtype) {
  // A bool is one byte that must be 0 or 1; a file may hold any byte there, so bools are read as
  // bytes and compared with 0.
  const auto stored = dtype == torch::kBool ? torch::kUInt8 : dtype;
  // host: a file's bytes are read on the host; the caller moves the tensor where it is needed
  auto tensor = torch::empty(shape, torch::TensorOptions().dtype(stored));
  if (!bytes.empty()) std::memcpy(tensor.data_ptr(), bytes.data(), bytes.size());
  return dtype == torch::kBool ? tensor.ne(0) : tensor;
}

std::string_view bytes_of(const torch::Tensor& contiguous_cpu) {
  return std::string_view(static_cast<const char*>(contiguous_cpu.data_ptr()),
                          static_cast<std::size_t>(contiguous_cpu.numel()) * contiguous_cpu.element_size());
}

std::string shown_name(const std::string& name) {
  std::string out;
  for (const char c : name) {
    const auto byte = static_cast<unsigned char>(c);
    if (byte < 0x20 || byte == 0x7F) {
      static const char* digits = "0123456789abcdef";
      out += "\\x";
      out += digits[byte >> 4];
      out += digits[byte & 0xF];
    } else {
      out += c;
    }
  }
  return out;
}

void check_stored_name(const std::string& name, const std::string& where) {
  if (name.empty()) throw EnvironmentError(where + ": an entry has an empty name: the file is damaged");
  if (name.find('\0') != std::string::npos) {
    throw EnvironmentError(where + ": the entry name '" + shown_name(name) +
                           "' holds a NUL byte, which names cannot (readers would cut it there): the file is damaged or hostile");
  }
}

}  // namespace lmkit::tensor_files
