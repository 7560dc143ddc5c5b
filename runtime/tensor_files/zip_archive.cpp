#include "runtime/tensor_files/zip_archive.h"

#include <algorithm>
#include <array>

#include <fmt/format.h>

#if LMKIT_HAVE_ZLIB
#include <zlib.h>
#endif

#include "runtime/core/error.h"
#include "runtime/core/number_text.h"
#include "runtime/tensor_files/array_entry.h"

namespace lmkit::tensor_files {
namespace {

constexpr std::uint32_t kLocalHeader = 0x04034b50, kCentralHeader = 0x02014b50, kEnd = 0x06054b50;
constexpr std::uint32_t kEnd64 = 0x06064b50, kEnd64Locator = 0x07064b50;

std::uint64_t little_endian(std::string_view bytes, std::size_t at, int width) {
  std::uint64_t value = 0;
  for (int i = width - 1; i >= 0; --i) value = (value << 8) | static_cast<unsigned char>(bytes[at + static_cast<std::size_t>(i)]);
  return value;
}

void put(std::string& out, std::uint64_t value, int width) {
  for (int i = 0; i < width; ++i) out += static_cast<char>((value >> (8 * i)) & 0xFFu);
}

// The end-of-central-directory record: the last 22 bytes, or earlier when the archive has a comment.
std::uint64_t end_record_offset(const ByteSpan& file, const std::string& where) {
  if (file.size() < 22) throw EnvironmentError(where + " is too short to be a zip archive (" + integer_text(file.size()) + " bytes)");
  const std::uint64_t lowest = file.size() > 22 + 65535 ? file.size() - 22 - 65535 : 0;
  for (std::uint64_t at = file.size() - 22;; --at) {
    if (little_endian(file.bytes(at, 4, "the zip directory"), 0, 4) == kEnd) return at;
    if (at == lowest) break;
  }
  throw EnvironmentError(where + " has no zip directory at its end: it is truncated or not a zip archive");
}

void check_crc(const ZipMember& member, std::string_view uncompressed, const std::string& where) {
  // PyTorch can write archives without CRCs (torch.serialization.set_crc32_options(False)): their
  // directory says 0, and such a member is read unchecked (a damaged byte zeroing a CRC is a 2^-32 event).
  if (member.crc32 == 0) return;
  const auto crc = crc32_of(uncompressed);
  if (crc != member.crc32) {
    throw EnvironmentError(where + " is damaged: its bytes' CRC-32 is " + fmt::format("{:08x}", crc) +
                           ", the archive's directory says " + fmt::format("{:08x}", member.crc32) +
                           " (a changed byte, or a file changed after it was written); fetch or save it again");
  }
}

}  // namespace

std::uint32_t crc32_of(std::string_view bytes) {
#if LMKIT_HAVE_ZLIB
  // zlib's length is 32 bits: the bytes go in pieces of 1 GiB.
  uLong crc = crc32(0L, Z_NULL, 0);
  for (std::size_t at = 0; at < bytes.size(); at += std::size_t{1} << 30) {
    const auto piece = std::min<std::size_t>(bytes.size() - at, std::size_t{1} << 30);
    crc = crc32(crc, reinterpret_cast<const Bytef*>(bytes.data() + at), static_cast<uInt>(piece));
  }
  return static_cast<std::uint32_t>(crc);
#else
  static const auto table = [] {
    std::array<std::uint32_t, 256> t{};
    for (std::uint32_t n = 0; n < 256; ++n) {
      std::uint32_t c = n;
      for (int k = 0; k < 8; ++k) c = (c & 1) ? 0xEDB88320u ^ (c >> 1) : c >> 1;
      t[n] = c;
    }
    return t;
  }();
  std::uint32_t crc = 0xFFFFFFFFu;
  for (const unsigned char byte : bytes) crc = table[(crc ^ byte) & 0xFFu] ^ (crc >> 8);
  return crc ^ 0xFFFFFFFFu;
#endif
}

bool looks_like_zip(const ByteSpan& file) {
  return file.size() >= 4 && little_endian(file.bytes(0, 4, ""), 0, 4) == kLocalHeader;
}

std::vector<ZipMember> zip_members(const ByteSpan& file) {
  const std::string& where = file.where();
  const auto end_at = end_record_offset(file, where);
  const auto end = file.bytes(end_at, 22, "the zip directory");
  std::uint64_t count = little_endian(end, 10, 2);
  std::uint64_t directory_size = little_endian(end, 12, 4);
  std::uint64_t directory_at = little_endian(end, 16, 4);
  if (count == 0xFFFF || directory_size == 0xFFFFFFFFu || directory_at == 0xFFFFFFFFu) {
    if (end_at < 20) throw EnvironmentError(where + ": its ZIP64 directory locator is missing");
    const auto locator = file.bytes(end_at - 20, 20, "the ZIP64 directory locator");
    if (little_endian(locator, 0, 4) != kEnd64Locator) throw EnvironmentError(where + ": its ZIP64 directory locator is missing");
    const auto end64 = file.bytes(little_endian(locator, 8, 8), 56, "the ZIP64 directory record");
    if (little_endian(end64, 0, 4) != kEnd64) throw EnvironmentError(where + ": its ZIP64 directory record is damaged");
    count = little_endian(end64, 32, 8);
    directory_size = little_endian(end64, 40, 8);
    directory_at = little_endian(end64, 48, 8);
  }
  const auto directory = file.bytes(directory_at, directory_size, "the zip directory");
  if (count > directory_size / 46) throw EnvironmentError(where + ": its zip directory claims " + integer_text(count) + " members in " + integer_text(directory_size) + " bytes");
  std::vector<ZipMember> members;
  struct Span {
    std::uint64_t begin, end;
    std::string name;
  };
  std::vector<Span> spans;
  std::size_t at = 0;
  for (std::uint64_t i = 0; i < count; ++i) {
    if (at + 46 > directory.size() || little_endian(directory, at, 4) != kCentralHeader) {
      throw EnvironmentError(where + ": its zip directory is damaged at member " + integer_text(i + 1));
    }
    ZipMember member;
    const auto flags = little_endian(directory, at + 8, 2);
    member.method = static_cast<std::uint16_t>(little_endian(directory, at + 10, 2));
    member.crc32 = static_cast<std::uint32_t>(little_endian(directory, at + 16, 4));
    std::uint64_t compressed = little_endian(directory, at + 20, 4);
    member.size = little_endian(directory, at + 24, 4);
    const auto name_length = little_endian(directory, at + 28, 2);
    const auto extra_length = little_endian(directory, at + 30, 2);
    const auto comment_length = little_endian(directory, at + 32, 2);
    std::uint64_t local_at = little_endian(directory, at + 42, 4);
    if (at + 46 + name_length + extra_length + comment_length > directory.size()) {
      throw EnvironmentError(where + ": its zip directory is damaged at member " + integer_text(i + 1));
    }
    member.name = std::string(directory.substr(at + 46, name_length));
    const std::string member_where = where + ", member '" + member.name + "'";
    // ZIP64: the sizes and offset that did not fit 32 bits follow in the extra field 0x0001, in order.
    auto extra = directory.substr(at + 46 + name_length, extra_length);
    while (extra.size() >= 4) {
      const auto id = little_endian(extra, 0, 2);
      const auto length = little_endian(extra, 2, 2);
      if (4 + length > extra.size()) break;
      if (id == 0x0001) {
        std::size_t field = 4;
        for (auto* value : {&member.size, &compressed, &local_at}) {
          const bool needed = *value == 0xFFFFFFFFu;
          if (!needed) continue;
          if (field + 8 > 4 + length) throw EnvironmentError(member_where + ": its ZIP64 sizes are missing");
          *value = little_endian(extra, field, 8);
          field += 8;
        }
      }
      extra.remove_prefix(4 + length);
    }
    if (flags & 1u) throw EnvironmentError(member_where + " is encrypted");
    if (member.method != 0 && member.method != 8) {
      throw EnvironmentError(member_where + " is compressed with method " + integer_text(member.method) + " (lmkit reads stored and deflated members)");
    }
    if (member.method == 0 && compressed != member.size) {
      throw EnvironmentError(member_where + " is stored but its sizes differ (" + integer_text(compressed) + " and " + integer_text(member.size) + ")");
    }
    const auto local = file.bytes(local_at, 30, member_where + "'s local header");
    if (little_endian(local, 0, 4) != kLocalHeader) throw EnvironmentError(member_where + ": its local header is damaged");
    const auto data_at = local_at + 30 + little_endian(local, 26, 2) + little_endian(local, 28, 2);
    member.data = file.bytes(data_at, compressed, member_where);
    spans.push_back({local_at, data_at + compressed, member.name});
    members.push_back(std::move(member));
    at += 46 + name_length + extra_length + comment_length;
  }
  // Two members sharing bytes would let a small file read as many copies of one large member.
  std::sort(spans.begin(), spans.end(), [](const Span& a, const Span& b) { return a.begin < b.begin; });
  for (std::size_t i = 1; i < spans.size(); ++i) {
    if (spans[i].begin < spans[i - 1].end) {
      throw EnvironmentError(where + ": members '" + spans[i - 1].name + "' and '" + spans[i].name +
                             "' share bytes: the archive is damaged");
    }
  }
  return members;
}

std::string_view member_bytes(const ZipMember& member, std::string& buffer, const std::string& where, std::uint64_t limit,
                              bool check_crc_now) {
  if (member.method == 0) {
    if (check_crc_now && limit >= member.size) check_crc(member, member.data, where);
    return member.data.substr(0, std::min<std::uint64_t>(limit, member.data.size()));
  }
  // Deflate expands at most ~1032:1: a larger claim is a damaged (or hostile) header, not an array.
  if (member.size / 1032 > member.data.size()) {
    throw EnvironmentError(where + " claims " + integer_text(member.size) + " bytes inflated from " +
                           integer_text(member.data.size()) + " compressed (deflate cannot expand that much): it is damaged");
  }
#if LMKIT_HAVE_ZLIB
  const auto wanted = std::min(limit, member.size);
  buffer.assign(wanted, '\0');
  z_stream stream{};
  if (inflateInit2(&stream, -MAX_WBITS) != Z_OK) throw std::bad_alloc();
  int status = Z_OK;
  // zlib's counters of one call are 32 bits: input and output are handed over in pieces of 1 GiB.
  while (status == Z_OK && stream.total_out < wanted) {
    if (stream.avail_in == 0) {
      // With no input left, inflate still empties its window; it says Z_BUF_ERROR when it cannot go on.
      const auto left = member.data.size() - stream.total_in;
      stream.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(member.data.data() + stream.total_in));
      stream.avail_in = static_cast<uInt>(std::min<std::uint64_t>(left, 1u << 30));
    }
    if (stream.avail_out == 0) {
      stream.next_out = reinterpret_cast<Bytef*>(buffer.data() + stream.total_out);
      stream.avail_out = static_cast<uInt>(std::min<std::uint64_t>(wanted - stream.total_out, 1u << 30));
    }
    status = inflate(&stream, Z_NO_FLUSH);
  }
  const std::uint64_t produced = stream.total_out;
  const std::string zlib_message = stream.msg ? stream.msg : "";
  inflateEnd(&stream);
  if (status != Z_OK && status != Z_STREAM_END && status != Z_BUF_ERROR) {
    throw EnvironmentError(where + " does not inflate (zlib: " + (zlib_message.empty() ? "error " + integer_text(status) : zlib_message) +
                           "): it is damaged");
  }
  if (produced != wanted) {
    throw EnvironmentError(where + " inflates to " + integer_text(produced) + " bytes, its header says " + integer_text(member.size) +
                           ": it is damaged");
  }
  const std::string_view inflated(buffer.data(), produced);
  if (check_crc_now && produced == member.size) check_crc(member, inflated, where);
  return inflated;
#else
  (void)buffer;
  (void)limit;
  (void)check_crc_now;
  throw EnvironmentError(where + " is deflated (np.savez_compressed), and this build of lmkit has no zlib: re-save it with "
                         "np.savez, or build lmkit with zlib (zlib1g-dev)");
#endif
}

std::string stored_zip(const std::vector<std::pair<std::string, std::string>>& files) {
  std::string out, directory;
  if (files.size() >= 0xFFFF) {
    throw UsageError("write_tensors: an .npz holds fewer than 65,535 arrays here (no ZIP64), got " + integer_text(files.size()) +
                     ": write safetensors instead");
  }
  for (const auto& [name, bytes] : files) {
    if (name.size() >= 0xFFFF) throw UsageError("write_tensors: a name of " + integer_text(name.size()) + " bytes is too long for a zip");
    const auto crc = crc32_of(bytes);
    const auto local_at = out.size();
    if (local_at + 30 + name.size() + bytes.size() >= 0xFFFFFFFFu) {
      throw UsageError("write_tensors: an .npz of more than 4 GiB is not written (no ZIP64 here): write safetensors instead");
    }
    const auto header = [&](std::string& to, bool central) {
      put(to, central ? kCentralHeader : kLocalHeader, 4);
      if (central) put(to, 20, 2);  // made by: version 2.0
      put(to, 20, 2);               // needed: 2.0
      put(to, 0, 2);                // flags
      put(to, 0, 2);                // stored
      put(to, 0, 2);                // time
      put(to, 0x21, 2);             // date: 1980-01-01
      put(to, crc, 4);
      put(to, bytes.size(), 4);
      put(to, bytes.size(), 4);
      put(to, name.size(), 2);
      put(to, 0, 2);  // extra
      if (central) {
        put(to, 0, 2);  // comment
        put(to, 0, 2);  // disk
        put(to, 0, 2);  // internal attributes
        put(to, 0, 4);  // external attributes
        put(to, local_at, 4);
      }
      to += name;
    };
    header(out, false);
    out += bytes;
    header(directory, true);
  }
  const auto directory_at = out.size();
  out += directory;
  put(out, kEnd, 4);
  put(out, 0, 2);
  put(out, 0, 2);
  put(out, files.size(), 2);
  put(out, files.size(), 2);
  put(out, directory.size(), 4);
  put(out, directory_at, 4);
  put(out, 0, 2);
  return out;
}

}  // namespace lmkit::tensor_files
