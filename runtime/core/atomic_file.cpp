#include "runtime/core/atomic_file.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <fstream>
#include <iterator>
#include <unistd.h>

#include "runtime/core/error.h"

namespace lmkit {

void write_file_atomically(const std::string& path, const std::string& bytes) {
  const std::string tmp = path + ".tmp." + std::to_string(::getpid());
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) throw EnvironmentError("cannot write '" + path + "': " + std::strerror(errno));
  std::size_t written = 0;
  while (written < bytes.size()) {
    const auto n = ::write(fd, bytes.data() + written, bytes.size() - written);
    if (n < 0 && errno == EINTR) continue;  // a signal (e.g. the preemption notice) is not a failure
    if (n <= 0) {
      const std::string reason = std::strerror(errno);
      ::close(fd);
      std::remove(tmp.c_str());
      throw EnvironmentError("cannot write '" + path + "': " + reason + " (disk full?)");
    }
    written += static_cast<std::size_t>(n);
  }
  // fsync before rename: otherwise a power loss can leave the new name pointing at empty blocks.
  if (::fsync(fd) != 0 || ::close(fd) != 0) {
    const std::string reason = std::strerror(errno);
    std::remove(tmp.c_str());
    throw EnvironmentError("cannot write '" + path + "': " + reason);
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    const std::string reason = std::strerror(errno);
    std::remove(tmp.c_str());
    throw EnvironmentError("cannot move '" + tmp + "' into place at '" + path + "': " + reason);
  }
}

std::string read_file(const std::string& path, const std::string& what) {
  std::ifstream file(path, std::ios::binary);
  if (!file) throw EnvironmentError("cannot open " + what + " '" + path + "': " + std::strerror(errno));
  return std::string((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
}

}  // namespace lmkit
