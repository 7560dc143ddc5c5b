// One writer at a time: an exclusive lock on a file (flock), held for the life of a FileLock and
// released by the kernel when the holding process ends however it ends (SIGKILL included), so
// there is never a stale lock to clean up by hand. The file also records its holder (pid, host,
// start time, what it does) for the message a second writer gets. Locks taken through another
// open of the same file conflict within one process too.
//
// On filesystems without flock (Lustre mounted without -o flock or -o localflock, some FUSE
// filesystems: ENOSYS, EOPNOTSUPP, ENOLCK) lmkit warns and goes on unlocked.
#pragma once
#include <memory>
#include <string>

namespace lmkit {

class FileLock {
 public:
  // Takes the lock on `path` (created if missing) for `purpose` (e.g. "training run"). Throws
  // UsageError naming the path, the holder and the way out when another open of it holds the lock;
  // EnvironmentError when the file cannot be opened.
  FileLock(const std::string& path, const std::string& purpose);
  ~FileLock();
  FileLock(const FileLock&) = delete;
  FileLock& operator=(const FileLock&) = delete;

 private:
  int fd_ = -1;
};

}  // namespace lmkit
