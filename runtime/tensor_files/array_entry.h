// One array of a tensor file, as the format readers (safetensors, NumPy, zip) hand it to
// tensor_file.cpp: its description, and its element bytes where they lie (in the mapped file, or in
// a buffer a deflated member was inflated into).
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "runtime/core/torch.h"

namespace lmkit::tensor_files {

struct ArrayEntry {
  std::string name;
  torch::ScalarType dtype = torch::kFloat32;
  std::vector<std::int64_t> shape;
  bool fortran_order = false;   // NumPy's column-major layout: shape reversed in memory
  std::uint64_t byte_count = 0;  // numel × element size
  std::string_view data;        // exactly byte_count bytes (empty until the entry is read)
};

// numel(shape) × the element size of dtype; EnvironmentError naming `where` when a size is
// negative or the product does not fit 63 bits (a header claiming an impossible array).
std::uint64_t checked_byte_count(const std::vector<std::int64_t>& shape, torch::ScalarType dtype, const std::string& where);

// A contiguous CPU tensor holding a copy of the entry's bytes (little-endian, as every format here
// stores them), in C order.
torch::Tensor tensor_of(const ArrayEntry& entry);

// A CPU tensor of `shape` and `dtype` holding exactly `bytes` (their count is the caller's check).
// A tensor's name as text: the name with each control byte (NUL included) written as \xNN.
std::string shown_name(const std::string& name);

// The names a tensor file may hold: not empty, no NUL (C strings, and so most readers, end there:
// "w\0a" and "w\0b" would both be "w"). EnvironmentError naming `where` otherwise.
void check_stored_name(const std::string& name, const std::string& where);

torch::Tensor tensor_from_bytes(std::string_view bytes, const std::vector<std::int64_t>& shape, torch::ScalarType dtype);


// The bytes of a contiguous CPU tensor, as they lie in memory.
std::string_view bytes_of(const torch::Tensor& contiguous_cpu);

}  // namespace lmkit::tensor_files
