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

#include <nlohmann/json.hpp>

#include "runtime/core/error.h"
#include "runtime/core/number_text.h"
#include "runtime/core/warning.h"

namespace lmkit {
namespace {

std::string host_name() {
  char name[256] = {0};
  if (::gethostname(name, sizeof name - 1) != 0) return "an unknown host";
  return name;
}

std::string utc_now() {
  const std::time_t now = std::time(nullptr);
  std::tm parts{};
  ::gmtime_r(&now, &parts);
  char text[32];
  std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%SZ", &parts);
  return text;
}

// What the holder wrote into the file, as words ("pid 123 on host h, since ..., training run").
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

}  // namespace

FileLock::FileLock(const std::string& path, const std::string& purpose) {
  fd_ = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd_ < 0) {
    throw EnvironmentError("cannot open the lock file '" + path + "': " + std::strerror(errno));
  }
  int result;
  do {
    result = ::flock(fd_, LOCK_EX | LOCK_NB);
  } while (result != 0 && errno == EINTR);
  if (result != 0) {
    const int error = errno;
    if (error == EWOULDBLOCK) {
      const std::string holder = holder_of(fd_);
      ::close(fd_);
      fd_ = -1;
      const auto folder = std::filesystem::path(path).parent_path().string();
      throw UsageError("'" + (folder.empty() ? std::string(".") : folder) + "' is in use: its lock '" + path +
                       "' is held by " + holder + ". One lmkit process writes there at a time: wait for that one " +
                       "to end (its lock goes with it, however it ends), or use another folder");
    }
    if (!cannot_lock_here(error)) {
      ::close(fd_);
      fd_ = -1;
      throw EnvironmentError("cannot lock '" + path + "': " + std::strerror(error));
    }
    warn("cannot lock '" + path + "' on this filesystem (" + std::strerror(error) +
         "): one writer at a time is not enforced there (docs/cluster.md, \"One writer per run\")");
    return;
  }
  const std::string record = nlohmann::json{{"pid", static_cast<long long>(::getpid())},
                                            {"host", host_name()},
                                            {"started", utc_now()},
                                            {"purpose", purpose}}
                                 .dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) +
                             "\n";  // a path need not be UTF-8: a bad byte is replaced in the record
  // The record is for messages only: a failure to write it leaves the lock as good.
  if (::ftruncate(fd_, 0) == 0) {
    [[maybe_unused]] const auto written = ::pwrite(fd_, record.data(), record.size(), 0);
  }
}

FileLock::~FileLock() {
  if (fd_ >= 0) ::close(fd_);  // closing the last descriptor of the open file releases the lock
}

}  // namespace lmkit
