// NumPy's .npy format (numpy.lib.format, versions 1.0–3.0): the magic "\x93NUMPY", a version, a
// header length, a header that is a Python dict literal {'descr': '<f4', 'fortran_order': False,
// 'shape': (3, 4), }, then the array's bytes. Little-endian and one-byte dtypes only.
#pragma once
#include <string>
#include <string_view>

#include "runtime/tensor_files/array_entry.h"

namespace lmkit::tensor_files {

bool looks_like_npy(std::string_view bytes);

// The array of the .npy image whose first bytes are `head` (its header, at least) and whose whole
// size is `total_size`: its description, and in `data_offset` where its data starts. `where` names
// the file (and the member of an .npz) in errors. The data's size is checked against total_size.
ArrayEntry npy_header(std::string_view head, std::uint64_t total_size, const std::string& name, const std::string& where,
                      std::uint64_t& data_offset);

// A .npy image (version 1.0, or 2.0 for a header of 64 KiB or more) of a contiguous CPU tensor.
std::string npy_image(const torch::Tensor& tensor, const std::string& name);

}  // namespace lmkit::tensor_files
