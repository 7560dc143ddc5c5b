#include "runtime/data/token_cache.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>
#include <random>

#include "runtime/core/error.h"
#include "runtime/core/number_text.h"
#include "runtime/data/content_hash.h"

namespace lmkit::data {
namespace {

constexpr char kMagic[8] = {'L', 'M', 'K', 'I', 'T', 'T', 'O', 'K'};
// 2: checksums and source hashes are XXH3-64 (version 1 used a hash of lmkit's own). A file of
// another version is stale: rebuilt, never read.
constexpr std::uint32_t kVersion = 2;
constexpr std::uint32_t kEndianMarker = 0x01020304;
constexpr std::size_t kHeaderSize = 8 + 4 + 4 + 8;

struct FileCloser {
  void operator()(std::FILE* f) const { std::fclose(f); }
};
using File = std::unique_ptr<std::FILE, FileCloser>;

// Thrown inside load() for a file that cannot be trusted; load() turns it into "corrupt: ...".
struct Corrupt {
  std::string what;
};

// Reads the payload, hashing every byte read so that the checksum is verified in one pass without
// holding a second copy of the token ids.
class PayloadReader {
 public:
  PayloadReader(std::FILE* f, std::uint64_t remaining) : f_(f), remaining_(remaining) {}

  void bytes(void* out, std::size_t n) {
    if (n > remaining_) throw Corrupt{"truncated"};
    if (n > 0 && std::fread(out, 1, n, f_) != n) throw Corrupt{"truncated"};
    hash_.update(out, n);
    remaining_ -= n;
  }
  template <typename T>
  T value() {
    T v;
    bytes(&v, sizeof v);
    return v;
  }
  std::string str() {
    const auto n = value<std::uint32_t>();
    if (n > remaining_) throw Corrupt{"string length past the end"};
    std::string s(n, '\0');
    bytes(s.data(), n);
    return s;
  }
  std::uint64_t remaining() const { return remaining_; }
  std::uint64_t digest() const { return hash_.digest(); }

 private:
  std::FILE* f_;
  std::uint64_t remaining_;
  ContentHash hash_;
};

class PayloadWriter {
 public:
  explicit PayloadWriter(std::FILE* f) : f_(f) {}
  void bytes(const void* p, std::size_t n) {
    if (n > 0 && std::fwrite(p, 1, n, f_) != n) failed_ = true;
    hash_.update(p, n);
  }
  template <typename T>
  void value(T v) {
    bytes(&v, sizeof v);
  }
  void str(const std::string& s) {
    value<std::uint32_t>(static_cast<std::uint32_t>(s.size()));
    bytes(s.data(), s.size());
  }
  bool failed() const { return failed_; }
  std::uint64_t digest() const { return hash_.digest(); }

 private:
  std::FILE* f_;
  ContentHash hash_;
  bool failed_ = false;
};

std::string describe_change(const CacheKey& cached, const CacheKey& wanted) {
  if (cached.protocol != wanted.protocol) return "stale: built for protocol '" + cached.protocol + "'";
  if (cached.files.size() != wanted.files.size()) return "stale: built from other files";
  for (std::size_t i = 0; i < wanted.files.size(); ++i) {
    const auto& a = cached.files[i];
    const auto& b = wanted.files[i];
    if (a.name != b.name) return "stale: built from " + a.name + " instead of " + b.name;
    if (a.size != b.size) return "stale: " + b.name + " changed size";
    if (a.mtime_ns != b.mtime_ns) return "stale: " + b.name + " was modified (mtime)";
    if (a.content_hash != b.content_hash) return "stale: " + b.name + " has other contents";
  }
  return "stale";
}

}  // namespace

SourceFile fingerprint(const std::filesystem::path& path) {
  struct stat info {};
  if (::stat(path.c_str(), &info) != 0) {
    throw EnvironmentError("cannot open " + path.string() + ": " + std::strerror(errno));
  }
  File f(std::fopen(path.c_str(), "rb"));
  if (!f) throw EnvironmentError("cannot open " + path.string() + ": " + std::strerror(errno));
  ContentHash hash;
  std::vector<char> buffer(1 << 20);
  std::size_t got;
  while ((got = std::fread(buffer.data(), 1, buffer.size(), f.get())) > 0) hash.update(buffer.data(), got);
  if (std::ferror(f.get())) throw EnvironmentError("cannot read " + path.string() + ": " + std::strerror(errno));
  SourceFile s;
  s.name = path.filename().string();
  s.size = static_cast<std::uint64_t>(info.st_size);
  s.mtime_ns = static_cast<std::int64_t>(info.st_mtim.tv_sec) * 1000000000 + info.st_mtim.tv_nsec;
  s.content_hash = hash.digest();
  return s;
}

std::optional<CachedTokens> TokenCache::load(const CacheKey& key, std::string* why) const {
  auto fail = [&](std::string reason) -> std::optional<CachedTokens> {
    if (why) *why = std::move(reason);
    return std::nullopt;
  };
  File f(std::fopen(file_.c_str(), "rb"));
  if (!f) return fail("no cache");
  try {
    char header[kHeaderSize];
    if (std::fread(header, 1, kHeaderSize, f.get()) != kHeaderSize) throw Corrupt{"truncated header"};
    if (std::memcmp(header, kMagic, 8) != 0) throw Corrupt{"not an lmkit token cache"};
    std::uint32_t version, marker;
    std::uint64_t checksum;
    std::memcpy(&version, header + 8, 4);
    std::memcpy(&marker, header + 12, 4);
    std::memcpy(&checksum, header + 16, 8);
    if (marker != kEndianMarker) throw Corrupt{"written on a machine of other byte order"};
    if (version != kVersion) return fail("stale: cache format " + integer_text(version));
    std::fseek(f.get(), 0, SEEK_END);
    const long end = std::ftell(f.get());
    std::fseek(f.get(), static_cast<long>(kHeaderSize), SEEK_SET);
    if (end < static_cast<long>(kHeaderSize)) throw Corrupt{"truncated"};
    PayloadReader in(f.get(), static_cast<std::uint64_t>(end) - kHeaderSize);

    CacheKey cached;
    cached.protocol = in.str();
    const auto nfiles = in.value<std::uint32_t>();
    if (nfiles > 64) throw Corrupt{"implausible file count"};
    for (std::uint32_t i = 0; i < nfiles; ++i) {
      SourceFile s;
      s.name = in.str();
      s.size = in.value<std::uint64_t>();
      s.mtime_ns = in.value<std::int64_t>();
      s.content_hash = in.value<std::uint64_t>();
      cached.files.push_back(std::move(s));
    }
    // The key is checked before the (large) body is read: a stale cache costs almost nothing.
    if (!(cached == key)) return fail(describe_change(cached, key));

    CachedTokens tokens;
    const auto nwords = in.value<std::uint64_t>();
    if (nwords > in.remaining()) throw Corrupt{"implausible vocabulary size"};
    for (std::uint64_t i = 0; i < nwords; ++i) {
      if (tokens.vocab.add(in.str()) != static_cast<std::int64_t>(i)) throw Corrupt{"duplicate word"};
    }
    const auto nsplits = in.value<std::uint32_t>();
    if (nsplits > 16) throw Corrupt{"implausible split count"};
    for (std::uint32_t i = 0; i < nsplits; ++i) {
      TokenSplit split;
      split.name = in.str();
      const auto n = in.value<std::uint64_t>();
      if (n > in.remaining() / sizeof(std::int64_t)) throw Corrupt{"split longer than the file"};
      split.ids.resize(n);
      in.bytes(split.ids.data(), n * sizeof(std::int64_t));
      for (const auto id : split.ids) {
        if (id < 0 || id >= static_cast<std::int64_t>(nwords)) throw Corrupt{"token id out of range"};
      }
      tokens.splits.push_back(std::move(split));
    }
    if (in.remaining() != 0) throw Corrupt{"trailing bytes"};
    if (in.digest() != checksum) throw Corrupt{"checksum mismatch"};
    return tokens;
  } catch (const Corrupt& c) {
    return fail("corrupt (" + c.what + ")");
  }
}

void TokenCache::store(const CacheKey& key, const CachedTokens& tokens) const {
  std::error_code ec;
  if (file_.has_parent_path()) std::filesystem::create_directories(file_.parent_path(), ec);
  std::random_device entropy;
  const auto temp = file_.string() + ".tmp." + integer_text(::getpid()) + "." + integer_text(entropy());
  auto fail = [&](const std::string& what) {
    const std::string message = "cannot write the token cache " + temp + ": " + what;
    std::remove(temp.c_str());
    throw EnvironmentError(message);
  };
  {
    File f(std::fopen(temp.c_str(), "wb"));
    if (!f) fail(std::strerror(errno));
    // The checksum is only known at the end: write a placeholder header, then patch it.
    char header[kHeaderSize] = {};
    std::fwrite(header, 1, kHeaderSize, f.get());
    PayloadWriter out(f.get());
    out.str(key.protocol);
    out.value<std::uint32_t>(static_cast<std::uint32_t>(key.files.size()));
    for (const auto& s : key.files) {
      out.str(s.name);
      out.value<std::uint64_t>(s.size);
      out.value<std::int64_t>(s.mtime_ns);
      out.value<std::uint64_t>(s.content_hash);
    }
    out.value<std::uint64_t>(static_cast<std::uint64_t>(tokens.vocab.size()));
    for (const auto& w : tokens.vocab.words()) out.str(w);
    out.value<std::uint32_t>(static_cast<std::uint32_t>(tokens.splits.size()));
    for (const auto& split : tokens.splits) {
      out.str(split.name);
      out.value<std::uint64_t>(split.ids.size());
      out.bytes(split.ids.data(), split.ids.size() * sizeof(std::int64_t));
    }
    std::memcpy(header, kMagic, 8);
    std::memcpy(header + 8, &kVersion, 4);
    std::memcpy(header + 12, &kEndianMarker, 4);
    const std::uint64_t checksum = out.digest();
    std::memcpy(header + 16, &checksum, 8);
    if (out.failed() || std::fseek(f.get(), 0, SEEK_SET) != 0 ||
        std::fwrite(header, 1, kHeaderSize, f.get()) != kHeaderSize || std::fflush(f.get()) != 0 ||
        ::fsync(::fileno(f.get())) != 0) {
      fail(std::strerror(errno));
    }
    if (std::fclose(f.release()) != 0) fail(std::strerror(errno));
  }
  if (std::rename(temp.c_str(), file_.c_str()) != 0) fail(std::strerror(errno));
}

}  // namespace lmkit::data
