#include "runtime/data/content_hash.h"

#include <algorithm>
#include <cstring>

namespace lmkit::data {
namespace {

constexpr std::uint64_t kPrime1 = 0x9E3779B185EBCA87ULL;
constexpr std::uint64_t kPrime2 = 0xC2B2AE3D27D4EB4FULL;
constexpr std::uint64_t kPrime3 = 0x165667B19E3779F9ULL;

std::uint64_t rotl(std::uint64_t x, int r) { return (x << r) | (x >> (64 - r)); }

std::uint64_t load64(const unsigned char* p) {
  std::uint64_t v;
  std::memcpy(&v, p, 8);  // host byte order: cache files are only read where they were written
  return v;
}

std::uint64_t mix(std::uint64_t lane, std::uint64_t word) {
  return rotl(lane + word * kPrime2, 31) * kPrime1;
}

// Spreads every input bit over the whole word (avalanche), so nearby inputs give unrelated digests.
std::uint64_t finish(std::uint64_t h) {
  h ^= h >> 33;
  h *= kPrime2;
  h ^= h >> 29;
  h *= kPrime3;
  h ^= h >> 32;
  return h;
}

}  // namespace

ContentHash::ContentHash()
    : lanes_{kPrime1 + kPrime2, kPrime2, 0, 0ULL - kPrime1} {}

void ContentHash::block(const unsigned char* p) {
  for (int i = 0; i < 4; ++i) lanes_[i] = mix(lanes_[i], load64(p + 8 * i));
}

void ContentHash::update(const void* data, std::size_t size) {
  auto* p = static_cast<const unsigned char*>(data);
  total_ += size;
  if (pending_size_ > 0) {
    const std::size_t take = std::min(size, sizeof(pending_) - pending_size_);
    std::memcpy(pending_ + pending_size_, p, take);
    pending_size_ += take;
    p += take;
    size -= take;
    if (pending_size_ < sizeof(pending_)) return;
    block(pending_);
    pending_size_ = 0;
  }
  while (size >= 32) {
    block(p);
    p += 32;
    size -= 32;
  }
  std::memcpy(pending_, p, size);
  pending_size_ = size;
}

std::uint64_t ContentHash::digest() const {
  std::uint64_t h = rotl(lanes_[0], 1) + rotl(lanes_[1], 7) + rotl(lanes_[2], 12) + rotl(lanes_[3], 18);
  h = (h ^ total_) * kPrime1;
  for (std::size_t i = 0; i < pending_size_; ++i) h = (h ^ pending_[i]) * kPrime3;
  return finish(h);
}

std::uint64_t hash_bytes(const void* data, std::size_t size) {
  ContentHash h;
  h.update(data, size);
  return h.digest();
}

}  // namespace lmkit::data
