// A file mapped read-only into memory: formats that index a large file (safetensors, .npy, a zip
// archive) read the bytes of one entry without reading the others; the kernel pages in only what
// is touched. Every access is bounds-checked against the file's size.
//
// A file another program truncates while it is mapped would kill the process with SIGBUS at the
// first touch of a page past its new end. lmkit turns that into an error instead: a SIGBUS handler
// (installed once, chained to any earlier one) finds the fault inside a live MappedFile, puts a page
// of zeros there and marks the file as changed; the reader then calls check_unchanged() (the tensor
// file readers do, after reading and when any error comes up) and gets an EnvironmentError naming
// the file. Faults outside lmkit's mappings go to the handler that was there before (or kill the
// process as they would have).
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "runtime/core/byte_span.h"

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
  // The whole file as a ByteSpan named "'<path>'" (the same checked reads).
  ByteSpan span() const;

  // Whether a page of the mapping was found gone (the file shrank under it) since it was opened.
  bool changed() const;
  // EnvironmentError naming the file when changed(): what was read from it cannot be trusted.
  void check_unchanged() const;

 private:
  std::string path_;
  const char* data_ = nullptr;
  std::uint64_t size_ = 0;
  int slot_ = -1;  // its entry in the SIGBUS handler's table; -1: not registered (empty file, or table full)
};

}  // namespace lmkit
