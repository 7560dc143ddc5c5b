// One writer at a time: an exclusive lock on a file (flock), held for the life of a FileLock and
// released by the kernel when the holding process ends however it ends (SIGKILL included), so
// there is never a stale lock to clean up by hand. The file also records its holder (pid, host,
// start time, what it does) for the message a second writer gets. Locks taken through another
// open of the same file conflict within one process too.
//
// A folder is locked through a descriptor of the folder itself and through its record file
// `folder/.lock` (which holds the holder's pid, host and start): deleting or editing that file by
// hand frees nothing on this machine (a second writer is still refused; it then names "another
// process" if the record is gone), and the record file's lock is the one a network filesystem
// (NFS, Lustre with -o flock) enforces across nodes — where a folder's flock may hold on one node
// only, or fail (EBADF: then the record file alone is the lock).
//
// On filesystems without flock (Lustre mounted without -o flock or -o localflock, some FUSE
// filesystems: ENOSYS, EOPNOTSUPP, ENOLCK) lmkit warns and goes on unlocked.
#pragma once
#include <memory>
#include <optional>
#include <string>

namespace lmkit {

class FileLock {
 public:
  // Takes the lock on `path` for `purpose` (e.g. "training run"): on the folder itself when `path` is
  // an existing folder (its record in path/.lock), else on the file (created if missing). Throws
  // UsageError naming the path, the holder and the way out when another open of it holds the lock;
  // EnvironmentError when it cannot be opened.
  FileLock(const std::string& path, const std::string& purpose);
  ~FileLock();
  FileLock(const FileLock&) = delete;
  FileLock& operator=(const FileLock&) = delete;

  // Who holds the lock on the folder `path` now ("pid 123 on host h, since …: training run …"), or
  // nullopt when nobody does (or the filesystem has no locks). Takes nothing and writes nothing.
  static std::optional<std::string> holder(const std::string& path);

 private:
  void lock_file(const std::string& path, const std::string& purpose);
  int fd_ = -1;         // the locked file (a folder's record file, or the file asked for)
  int folder_fd_ = -1;  // the locked folder, when a folder was asked for
};

}  // namespace lmkit
