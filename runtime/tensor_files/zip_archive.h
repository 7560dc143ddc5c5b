// The zip container of NumPy's .npz and of PyTorch's torch.save files (PKWARE APPNOTE 6.3): the
// central directory is read (ZIP64 included), each member's bytes located through its local header,
// and stored members read in place; deflated ones are inflated alone (zlib, when this build has it).
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "runtime/core/byte_span.h"

namespace lmkit::tensor_files {

struct ZipMember {
  std::string name;
  std::uint16_t method = 0;  // 0 stored, 8 deflated
  std::uint64_t size = 0;    // uncompressed
  std::uint32_t crc32 = 0;   // of the uncompressed bytes, from the central directory
  std::string_view data;     // the member's bytes as stored (compressed when deflated)
};

// CRC-32 (the zip polynomial, 0xEDB88320 reflected) of `bytes`: zlib's crc32 where this build has
// zlib, else a table of lmkit's own.
std::uint32_t crc32_of(std::string_view bytes);

bool looks_like_zip(const ByteSpan& file);

// Every member, checked: signatures, sizes and offsets inside the file, no encryption, a method
// lmkit reads, no two members sharing bytes. EnvironmentError naming the file and the member
// otherwise. The members' data are views into `file`'s bytes.
std::vector<ZipMember> zip_members(const ByteSpan& file);

// The member's bytes uncompressed: its data itself when stored; when deflated, the first `limit`
// bytes (all by default) inflated into `buffer`. A deflated member that claims more than deflate can
// expand to (1032 × its compressed size) or inflates to another size is refused. When the whole
// member is returned and `check_crc`, its CRC-32 must be the directory's (as NumPy's and Python's
// zip readers require): a flipped byte is refused naming the member, never read as a number.
std::string_view member_bytes(const ZipMember& member, std::string& buffer, const std::string& where,
                              std::uint64_t limit = UINT64_MAX, bool check_crc = true);

// A zip archive of the files given, stored (no compression), as np.savez writes them; ZIP64 records
// are not written, so the whole archive must stay below 4 GiB.
std::string stored_zip(const std::vector<std::pair<std::string, std::string>>& files);

}  // namespace lmkit::tensor_files
