// A binary cache of a tokenized corpus (vocabulary + token ids per split), so that a corpus is
// tokenized once and then reloaded at disk speed.
//
// The cache is keyed by how it was built: the protocol and, for every source file, its name, size,
// modification time (ns) and ContentHash. Any difference makes it stale and it is rebuilt. It is
// written to a temporary file in the same folder and renamed into place (readers never see half a
// file), and carries a checksum over everything after its header: a truncated or corrupted cache is
// reported and rebuilt, never trusted. Ids are also range-checked on load.
//
// File layout (host byte order; an endianness marker rejects foreign files):
//   "LMKITTOK" | u32 version | u32 0x01020304 | u64 checksum of the rest | key | vocabulary | splits
//   key   = str protocol, u32 nfiles, nfiles × (str name, u64 size, i64 mtime_ns, u64 hash)
//   vocab = u64 nwords, nwords × str        (str = u32 length + bytes)
//   split = u32 nsplits, nsplits × (str name, u64 ntokens, ntokens × i64 id)
#pragma once
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "runtime/data/vocabulary.h"

namespace lmkit::data {

struct SourceFile {
  std::string name;           // file name inside the corpus folder ("valid.txt")
  std::uint64_t size = 0;
  std::int64_t mtime_ns = 0;
  std::uint64_t content_hash = 0;
  bool operator==(const SourceFile& o) const {
    return name == o.name && size == o.size && mtime_ns == o.mtime_ns && content_hash == o.content_hash;
  }
};

// The fingerprint of `path` (reads the whole file to hash it; throws EnvironmentError when unreadable).
SourceFile fingerprint(const std::filesystem::path& path);

struct CacheKey {
  std::string protocol;
  std::vector<SourceFile> files;
  bool operator==(const CacheKey& o) const { return protocol == o.protocol && files == o.files; }
};

struct TokenSplit {
  std::string name;
  std::vector<std::int64_t> ids;
};

struct CachedTokens {
  Vocabulary vocab;
  std::vector<TokenSplit> splits;
};

class TokenCache {
 public:
  explicit TokenCache(std::filesystem::path file) : file_(std::move(file)) {}
  const std::filesystem::path& file() const { return file_; }

  // The cached tokens when the file exists, is intact and was built from `key`; otherwise nullopt
  // and, when `why` is given, the reason ("no cache", "stale: valid.txt changed", "corrupt: ...").
  std::optional<CachedTokens> load(const CacheKey& key, std::string* why = nullptr) const;

  // Writes atomically (temporary file + rename). Throws EnvironmentError when it cannot.
  void store(const CacheKey& key, const CachedTokens& tokens) const;

 private:
  std::filesystem::path file_;
};

}  // namespace lmkit::data
