// A fast streaming 64-bit hash for cache keys and checksums (not cryptographic): XXH3-64 from
// Debian's libxxhash (xxhash.h), seed 0.
//
// It detects accidental change (a modified corpus, a truncated or bit-flipped cache file), which is
// all a cache needs; the result does not depend on how the input is split into update() calls.
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string_view>

namespace lmkit::data {

class ContentHash {
 public:
  ContentHash();
  ~ContentHash();
  ContentHash(ContentHash&&) noexcept;
  ContentHash& operator=(ContentHash&&) noexcept;
  void update(const void* data, std::size_t size);
  void update(std::string_view text) { update(text.data(), text.size()); }
  std::uint64_t digest() const;

 private:
  struct State;
  std::unique_ptr<State> state_;
};

// The hash of one buffer (equal to a ContentHash fed the same bytes in any pieces).
std::uint64_t hash_bytes(const void* data, std::size_t size);

}  // namespace lmkit::data
