#include "runtime/core/mapped_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "runtime/core/atomic_file.h"
#include "runtime/core/error.h"
#include "runtime/core/number_text.h"

namespace lmkit {

MappedFile::MappedFile(const std::string& path, const std::string& what) : path_(path) {
  require_readable_file(path, what);
  // O_NONBLOCK: a named pipe must not block the open (it is refused below, as not a regular file).
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) throw EnvironmentError("cannot open " + what + " '" + path + "': " + std::strerror(errno));
  struct stat info {};
  if (::fstat(fd, &info) != 0) {
    const int error = errno;
    ::close(fd);
    throw EnvironmentError("cannot open " + what + " '" + path + "': " + std::strerror(error));
  }
  if (!S_ISREG(info.st_mode)) {
    ::close(fd);
    throw EnvironmentError("cannot open " + what + " '" + path + "': it is not a regular file");
  }
  size_ = static_cast<std::uint64_t>(info.st_size);
  if (size_ > 0) {
    void* mapped = ::mmap(nullptr, size_, PROT_READ, MAP_PRIVATE, fd, 0);
    if (mapped == MAP_FAILED) {
      const int error = errno;
      ::close(fd);
      throw EnvironmentError("cannot map " + what + " '" + path + "' into memory: " + std::strerror(error));
    }
    data_ = static_cast<const char*>(mapped);
  }
  ::close(fd);  // the mapping keeps the file's pages
}

MappedFile::~MappedFile() {
  if (data_) ::munmap(const_cast<char*>(data_), size_);
}

std::string_view MappedFile::bytes(std::uint64_t offset, std::uint64_t length, const std::string& what) const {
  if (offset > size_ || length > size_ - offset) {
    throw EnvironmentError("'" + path_ + "' is truncated or damaged: " + what + " needs bytes [" + integer_text(offset) +
                           ", " + integer_text(offset) + " + " + integer_text(length) + ") of a file of " +
                           integer_text(size_) + " bytes");
  }
  return std::string_view(data_ + offset, length);
}

}  // namespace lmkit
