#include "runtime/core/process_facts.h"

#include <limits.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstring>
#include <thread>

#include "runtime/core/error.h"
#include "runtime/core/interruption.h"
#include "runtime/core/number_text.h"

namespace lmkit {

bool process_alive(int pid) {
  if (pid <= 0) return false;
  return ::kill(pid, 0) == 0 || errno == EPERM;
}

int current_pid() { return static_cast<int>(::getpid()); }

std::string host_name() {
  char name[HOST_NAME_MAX + 1] = {};
  if (::gethostname(name, sizeof name - 1) != 0) return "localhost";
  return name;
}

std::string executable_path() {
  char path[PATH_MAX + 1] = {};
  const ssize_t n = ::readlink("/proc/self/exe", path, PATH_MAX);
  if (n <= 0) throw EnvironmentError("batch: cannot find this program's path (/proc/self/exe)");
  return std::string(path, static_cast<std::size_t>(n));
}

std::string absolute_path(const std::string& path) {
  if (!path.empty() && path[0] == '/') return path;
  char cwd[PATH_MAX + 1] = {};
  if (!::getcwd(cwd, PATH_MAX)) throw EnvironmentError(std::string("batch: cannot read the working directory: ") + std::strerror(errno));
  std::string base = cwd;
  std::string rest = path;
  while (rest.rfind("./", 0) == 0) rest = rest.substr(2);
  if (rest.empty() || rest == ".") return base;
  return base + "/" + rest;
}

void sleep_seconds(double seconds) {
  if (!(seconds >= 0) || !std::isfinite(seconds)) {
    throw UsageError("sleep: seconds must be a finite number >= 0, got " + describe_number(seconds));
  }
  // In slices, so that Ctrl-C stops it within a twentieth of a second (as training stops).
  InterruptibleScope interruptible;
  const auto start = std::chrono::steady_clock::now();
  for (;;) {
    interruptible.poll("waiting");
    const double left = seconds - std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (left <= 0) return;
    std::this_thread::sleep_for(std::chrono::duration<double>(std::min(left, 0.05)));
  }
}

}  // namespace lmkit
