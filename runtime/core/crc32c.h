// CRC-32C (Castagnoli), the checksum of TFRecord framing — what TensorBoard's event files use — and
// of other storage formats. No Debian library of this release offers it (zlib's crc32 is the IEEE
// polynomial), so it is here: a table-driven implementation, checked against the standard vectors.
#pragma once
#include <cstddef>
#include <cstdint>

namespace lmkit {

// The CRC-32C of `size` bytes at `data`, continuing from `crc` (0 for a fresh checksum).
std::uint32_t crc32c(const void* data, std::size_t size, std::uint32_t crc = 0);

// TFRecord's masked form: the CRC rotated right by 15 bits plus 0xa282ead8, so that a CRC stored in
// the data it covers does not checksum to a constant.
std::uint32_t masked_crc32c(const void* data, std::size_t size);

}  // namespace lmkit
