// A fast streaming 64-bit hash for cache keys and checksums (not cryptographic).
//
// Four independent multiply-rotate lanes over 32-byte blocks keep the CPU's multipliers busy, so
// hashing runs at several GB/s; the result does not depend on how the input is split into update()
// calls. It detects accidental change (a modified corpus, a truncated or bit-flipped cache file),
// which is all a cache needs.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string_view>

namespace lmkit::data {

class ContentHash {
 public:
  ContentHash();
  void update(const void* data, std::size_t size);
  void update(std::string_view text) { update(text.data(), text.size()); }
  std::uint64_t digest() const;

 private:
  void block(const unsigned char* p);
  std::uint64_t lanes_[4];
  unsigned char pending_[32];
  std::size_t pending_size_ = 0;
  std::uint64_t total_ = 0;
};

// The hash of one buffer.
std::uint64_t hash_bytes(const void* data, std::size_t size);

}  // namespace lmkit::data
