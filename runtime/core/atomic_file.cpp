#include "runtime/core/atomic_file.h"

#include <signal.h>
#include <sys/types.h>

#include <cerrno>
#include <filesystem>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <fstream>
#include <iterator>
#include <unistd.h>

#include "runtime/core/error.h"
#include "runtime/core/number_text.h"

namespace lmkit {

void write_file_atomically(const std::string& path, const std::string& bytes) {
  const std::string tmp = path + ".tmp." + integer_text(::getpid());
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

void require_readable_file(const std::string& path, const std::string& what) {
  std::error_code ec;
  const auto status = std::filesystem::status(path, ec);
  if (std::filesystem::is_directory(status)) {
    throw EnvironmentError("cannot open " + what + " '" + path + "': it is a folder, not a file");
  }
  if (ec || !std::filesystem::exists(status)) {
    throw EnvironmentError("cannot open " + what + " '" + path + "': " +
                           (ec ? ec.message() : std::string(std::strerror(ENOENT))));
  }
}

std::string read_file(const std::string& path, const std::string& what, std::uintmax_t max_bytes) {
  require_readable_file(path, what);
  // Read whole, so only a regular file of bounded size: a FIFO would block, a device never end.
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) {
    throw EnvironmentError("cannot read " + what + " '" + path + "': it is not a regular file (a device, a pipe or a socket)");
  }
  const auto size = std::filesystem::file_size(path, ec);
  if (!ec && size > max_bytes) {
    throw EnvironmentError("cannot read " + what + " '" + path + "': it holds " + integer_text(size) + " bytes, more than " +
                           integer_text(max_bytes) + " such a file can hold; it was not written by lmkit as it is (restore or delete it)");
  }
  std::ifstream file(path, std::ios::binary);
  if (!file) throw EnvironmentError("cannot open " + what + " '" + path + "': " + std::strerror(errno));
  std::string bytes((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
  if (file.bad()) throw EnvironmentError("cannot read " + what + " '" + path + "': " + std::strerror(errno));
  return bytes;
}

RemovedTemporaries remove_stale_temporaries(const std::string& dir) {
  RemovedTemporaries removed;
  std::error_code ec;
  std::filesystem::directory_iterator entries(dir, ec);
  if (ec) return removed;  // no folder yet: nothing left over
  for (const auto& entry : entries) {
    const std::string name = entry.path().filename().string();
    const auto mark = name.rfind(".tmp.");
    if (mark == std::string::npos || mark + 5 == name.size()) continue;
    const std::string digits = name.substr(mark + 5);
    if (digits.find_first_not_of("0123456789") != std::string::npos || digits.size() > 9) continue;
    const pid_t pid = static_cast<pid_t>(std::stol(digits));
    if (pid == ::getpid() || ::kill(pid, 0) == 0 || errno != ESRCH) continue;  // its writer may still run
    std::error_code size_error, remove_error;
    const auto size = entry.file_size(size_error);
    if (std::filesystem::remove(entry.path(), remove_error)) {
      ++removed.files;
      removed.bytes += size_error ? 0 : size;
    }
  }
  return removed;
}

}  // namespace lmkit
