#include "runtime/core/mapped_file.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <mutex>

#include "runtime/core/atomic_file.h"
#include "runtime/core/error.h"
#include "runtime/core/number_text.h"

namespace lmkit {
namespace {

// The live mappings, for the SIGBUS handler: a fixed table of lock-free slots (a handler may not
// lock or allocate). A mapping beyond the table's 256 slots is read unguarded, as before.
struct Slot {
  std::atomic<std::uintptr_t> begin{0}, end{0};
  std::atomic<bool> changed{false};
};
std::array<Slot, 256>& slots() {
  static std::array<Slot, 256> table;
  return table;
}

struct sigaction previous_bus_action {};

void on_bus_error(int signal, siginfo_t* info, void* context) {
  const auto address = reinterpret_cast<std::uintptr_t>(info->si_addr);
  for (auto& slot : slots()) {
    const auto begin = slot.begin.load(std::memory_order_acquire);
    if (begin != 0 && address >= begin && address < slot.end.load(std::memory_order_acquire)) {
      // The file shrank under this page: a page of zeros in its place lets the read go on; the
      // reader is told by check_unchanged(). mmap is a plain system call on Linux.
      const auto page = static_cast<std::uintptr_t>(::sysconf(_SC_PAGESIZE));
      void* at = reinterpret_cast<void*>(address & ~(page - 1));
      if (::mmap(at, page, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0) != MAP_FAILED) {
        slot.changed.store(true, std::memory_order_release);
        return;
      }
    }
  }
  // Not lmkit's: what was there before decides.
  if (previous_bus_action.sa_flags & SA_SIGINFO) {
    if (previous_bus_action.sa_sigaction != nullptr) return previous_bus_action.sa_sigaction(signal, info, context);
  } else if (previous_bus_action.sa_handler != SIG_IGN && previous_bus_action.sa_handler != SIG_DFL &&
             previous_bus_action.sa_handler != nullptr) {
    return previous_bus_action.sa_handler(signal);
  }
  // The default action: restored and raised again (delivered as the handler returns), so that the
  // process ends as it would have — a fault and a raise() alike.
  ::signal(SIGBUS, SIG_DFL);
  ::raise(signal);
}

void install_bus_handler() {
  static std::once_flag once;
  std::call_once(once, [] {
    struct sigaction action {};
    action.sa_sigaction = on_bus_error;
    action.sa_flags = SA_SIGINFO | SA_ONSTACK;
    sigemptyset(&action.sa_mask);
    ::sigaction(SIGBUS, &action, &previous_bus_action);
  });
}

int register_mapping(const char* data, std::uint64_t size) {
  install_bus_handler();
  const auto begin = reinterpret_cast<std::uintptr_t>(data);
  for (std::size_t i = 0; i < slots().size(); ++i) {
    std::uintptr_t free = 0;
    auto& slot = slots()[i];
    if (slot.begin.compare_exchange_strong(free, begin, std::memory_order_acq_rel)) {
      slot.changed.store(false, std::memory_order_relaxed);
      slot.end.store(begin + size, std::memory_order_release);
      return static_cast<int>(i);
    }
  }
  return -1;
}

}  // namespace

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
    slot_ = register_mapping(data_, size_);
  }
  ::close(fd);  // the mapping keeps the file's pages
}

MappedFile::~MappedFile() {
  if (slot_ >= 0) {
    auto& slot = slots()[static_cast<std::size_t>(slot_)];
    slot.end.store(0, std::memory_order_release);
    slot.begin.store(0, std::memory_order_release);
  }
  if (data_) ::munmap(const_cast<char*>(data_), size_);
}

bool MappedFile::changed() const {
  return slot_ >= 0 && slots()[static_cast<std::size_t>(slot_)].changed.load(std::memory_order_acquire);
}

void MappedFile::check_unchanged() const {
  if (!changed()) return;
  throw EnvironmentError("'" + path_ + "' changed while lmkit read it: it is shorter now than the " + integer_text(size_) +
                         " bytes it had when opened (another program truncated or is rewriting it), so what was read "
                         "cannot be trusted; read it again once it is complete");
}

std::string_view MappedFile::bytes(std::uint64_t offset, std::uint64_t length, const std::string& what) const {
  return span().bytes(offset, length, what);
}

ByteSpan MappedFile::span() const { return ByteSpan("'" + path_ + "'", std::string_view(data_, size_)); }

}  // namespace lmkit
