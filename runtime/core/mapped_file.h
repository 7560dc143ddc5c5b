// A file mapped read-only into memory: formats that index a large file (safetensors, .npy, a zip
// archive) read the bytes of one entry without reading the others; the kernel pages in only what
// is touched. Every access is bounds-checked against the file's size.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace lmkit {

class MappedFile {
 public:
  // EnvironmentError "cannot open <what> '<path>': <reason>" when it cannot be opened or mapped.
  explicit MappedFile(const std::string& path, const std::string& what = "file");
  ~MappedFile();
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  const std::string& path() const { return path_; }
  std::uint64_t size() const { return size_; }
  // `length` bytes from `offset`; EnvironmentError "'<path>' is truncated: <what> needs bytes
  // [offset, offset+length) of <size>" when they are not all in the file.
  std::string_view bytes(std::uint64_t offset, std::uint64_t length, const std::string& what) const;

 private:
  std::string path_;
  const char* data_ = nullptr;
  std::uint64_t size_ = 0;
};

}  // namespace lmkit
