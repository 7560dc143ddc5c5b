// safetensors (huggingface/safetensors): an 8-byte little-endian header length N, N bytes of JSON
// {"name": {"dtype": "F32", "shape": [..], "data_offsets": [begin, end]}, ..., "__metadata__": {..}},
// then the data, each entry's bytes at [begin, end) after the header.
#pragma once
#include <map>
#include <string>
#include <vector>

#include "runtime/core/mapped_file.h"
#include "runtime/tensor_files/array_entry.h"

namespace lmkit::tensor_files {

// Whether the bytes start like a safetensors file (a header length, then '{').
bool looks_like_safetensors(const MappedFile& file);

// Every entry, checked (dtype known, sizes, offsets inside the file, no two entries sharing bytes),
// sorted by data offset; each entry's data points into the mapping.
std::vector<ArrayEntry> safetensors_entries(const MappedFile& file);

// A safetensors image of contiguous CPU tensors, entries in name order, the header padded to 8 bytes.
std::string safetensors_image(const std::map<std::string, torch::Tensor>& tensors);

}  // namespace lmkit::tensor_files
