#include "runtime/core/file_lock.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <string>
#include <utility>

#include <nlohmann/json.hpp>

#include "runtime/core/error.h"
#include "runtime/core/clock.h"
#include "runtime/core/number_text.h"
#include "runtime/core/warning.h"

namespace lmkit {
namespace {

// The host a record names (its own fallback: a lock record must say something).
std::string lock_host_name() {
  char name[256] = {0};
  if (::gethostname(name, sizeof name - 1) != 0) return "an unknown host";
  return name;
}

// What the holder wrote into its record, as words ("pid 123 on host h, since ..., training run").
std::string holder_of(int fd) {
  std::string text;
  char buffer[1024];
  ssize_t n;
  off_t offset = 0;
  while ((n = ::pread(fd, buffer, sizeof buffer, offset)) > 0) {
    text.append(buffer, static_cast<std::size_t>(n));
    offset += n;
    if (text.size() > 16384) break;
  }
  const auto record = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (!record.is_object() || !record.contains("pid")) return "another process";
  std::string words = "pid " + record["pid"].dump();
  if (record.contains("host") && record["host"].is_string()) words += " on host " + record["host"].get<std::string>();
  if (record.contains("started") && record["started"].is_string()) words += ", since " + record["started"].get<std::string>();
  if (record.contains("purpose") && record["purpose"].is_string()) words += ": " + record["purpose"].get<std::string>();
  return words;
}

bool cannot_lock_here(int error) { return error == ENOSYS || error == EOPNOTSUPP || error == ENOLCK || error == EINVAL; }

int try_lock(int fd) {
  int result;
  do {
    result = ::flock(fd, LOCK_EX | LOCK_NB);
  } while (result != 0 && errno == EINTR);
  return result == 0 ? 0 : errno;
}

// The holder named from its record file (gone or unreadable: "another process", saying so).
std::string holder_from_record(const std::string& record_path) {
  const int fd = ::open(record_path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
  if (fd < 0) return "another process (its record '" + record_path + "' is gone)";
  const std::string holder = holder_of(fd);
  ::close(fd);
  return holder;
}

std::string holder_record(const std::string& purpose) {
  return nlohmann::json{{"pid", static_cast<long long>(::getpid())},
                        {"host", lock_host_name()},
                        {"started", utc_timestamp()},
                        {"purpose", purpose}}
             .dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) +
         "\n";  // a path need not be UTF-8: a bad byte is replaced in the record
}

// The record is for messages only: a failure to write it leaves the lock as good.
void write_record(int fd, const std::string& record) {
  if (::ftruncate(fd, 0) == 0) {
    [[maybe_unused]] const auto written = ::pwrite(fd, record.data(), record.size(), 0);
  }
}

[[noreturn]] void refuse(const std::string& folder, const std::string& lock, const std::string& holder) {
  throw UsageError("'" + folder + "' is in use: " + (lock.empty() ? std::string("it") : "its lock '" + lock + "'") +
                   " is held by " + holder + ". One lmkit process writes there at a time: wait for that one " +
                   "to end (its lock goes with it, however it ends), or use another folder");
}

}  // namespace

FileLock::FileLock(const std::string& path, const std::string& purpose) {
  std::error_code ec;
  if (!std::filesystem::is_directory(path, ec)) {
    lock_file(path, purpose);
    return;
  }
  // A folder: locked twice. The folder itself first, which no file a person may delete or edit can
  // free; then its record file `.lock`, as before, because a network filesystem (NFS, Lustre) may
  // take a folder's flock on this node only but the record file's on every node.
  const std::string record_path = (std::filesystem::path(path) / ".lock").string();
  const int folder_fd = ::open(path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (folder_fd < 0) throw EnvironmentError("cannot open the folder '" + path + "' to lock it: " + std::strerror(errno));
  const int error = try_lock(folder_fd);
  if (error == EWOULDBLOCK) {
    ::close(folder_fd);
    refuse(path, "", holder_from_record(record_path));
  }
  if (error != 0) {
    ::close(folder_fd);
    // Not on this filesystem (NFS without a folder lock: EBADF): the record file alone.
    if (error != EBADF && !cannot_lock_here(error)) {
      throw EnvironmentError("cannot lock the folder '" + path + "': " + std::strerror(error));
    }
    lock_file(record_path, purpose);
    return;
  }
  folder_fd_ = folder_fd;
  try {
    lock_file(record_path, purpose);
  } catch (...) {
    ::close(folder_fd_);
    folder_fd_ = -1;
    throw;
  }
}

void FileLock::lock_file(const std::string& path, const std::string& purpose) {
  fd_ = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd_ < 0) {
    throw EnvironmentError("cannot open the lock file '" + path + "': " + std::strerror(errno));
  }
  const int error = try_lock(fd_);
  if (error != 0) {
    if (error == EWOULDBLOCK) {
      const std::string holder = holder_of(fd_);
      ::close(fd_);
      fd_ = -1;
      const auto folder = std::filesystem::path(path).parent_path().string();
      refuse(folder.empty() ? std::string(".") : folder, path, holder);
    }
    ::close(fd_);
    fd_ = -1;
    if (!cannot_lock_here(error)) throw EnvironmentError("cannot lock '" + path + "': " + std::strerror(error));
    warn("cannot lock '" + path + "' on this filesystem (" + std::strerror(error) +
         "): one writer at a time is not enforced there (docs/cluster.md, \"One writer per run\")");
    return;
  }
  write_record(fd_, holder_record(purpose));
}

std::optional<std::string> FileLock::holder(const std::string& path) {
  const std::string record_path = (std::filesystem::path(path) / ".lock").string();
  // The folder's lock and its record file's, both: on a network filesystem the folder's may hold on
  // the writer's node only, and the record file's is the one every node sees (opened for writing,
  // as NFS emulates flock with write locks; never created). A lock the probe takes is released at
  // once with its descriptor; a writer starting in that instant is refused, naming this probe.
  for (const auto& [target, flags] : {std::pair{path, O_RDONLY | O_DIRECTORY | O_CLOEXEC}, std::pair{record_path, O_RDWR | O_CLOEXEC}}) {
    int fd = ::open(target.c_str(), flags);
    if (fd < 0 && errno == EACCES && target == record_path) fd = ::open(target.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) continue;
    const int error = try_lock(fd);
    ::close(fd);
    if (error == EWOULDBLOCK) return holder_from_record(record_path);
  }
  return std::nullopt;
}

FileLock::~FileLock() {
  // Closing the last descriptor of an open file releases its lock.
  if (fd_ >= 0) ::close(fd_);
  if (folder_fd_ >= 0) ::close(folder_fd_);
}

}  // namespace lmkit
