// Bytes under a name — a mapped file's, or an archive held in memory inside another file — read
// only through bounds-checked slices, so that a damaged length or offset is an error naming the
// bytes' owner, never a read past the end.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>

namespace lmkit {

class ByteSpan {
 public:
  // `where` names the bytes in messages, quotes included: "'<path>'", or "the weights archive
  // inside checkpoint '<path>'"; `whole` says what they are: "a file", "an archive".
  ByteSpan(std::string where, std::string_view bytes, std::string whole = "a file")
      : where_(std::move(where)), whole_(std::move(whole)), bytes_(bytes) {}

  const std::string& where() const { return where_; }
  std::uint64_t size() const { return bytes_.size(); }
  // `length` bytes from `offset`; EnvironmentError "<where> is truncated or damaged: <what> needs
  // bytes [offset, offset + length) of a file of N bytes" when they are not all there.
  std::string_view bytes(std::uint64_t offset, std::uint64_t length, const std::string& what) const;

 private:
  std::string where_, whole_;
  std::string_view bytes_;
};

}  // namespace lmkit
