#include "runtime/data/content_hash.h"

#include <new>

#include <xxhash.h>

namespace lmkit::data {

// XXH3's streaming state, allocated by the library (its layout is private to it).
struct ContentHash::State {
  State() : xxh(XXH3_createState()) {
    if (!xxh || XXH3_64bits_reset(xxh) != XXH_OK) throw std::bad_alloc();
  }
  ~State() { XXH3_freeState(xxh); }
  State(const State&) = delete;
  State& operator=(const State&) = delete;
  XXH3_state_t* xxh;
};

ContentHash::ContentHash() : state_(std::make_unique<State>()) {}
ContentHash::~ContentHash() = default;
ContentHash::ContentHash(ContentHash&&) noexcept = default;
ContentHash& ContentHash::operator=(ContentHash&&) noexcept = default;

void ContentHash::update(const void* data, std::size_t size) {
  if (size == 0) return;  // XXH3 takes (nullptr, 0), but an empty view's data() may be anything
  XXH3_64bits_update(state_->xxh, data, size);
}

std::uint64_t ContentHash::digest() const { return XXH3_64bits_digest(state_->xxh); }

std::uint64_t hash_bytes(const void* data, std::size_t size) {
  return size == 0 ? XXH3_64bits(nullptr, 0) : XXH3_64bits(data, size);
}

}  // namespace lmkit::data
