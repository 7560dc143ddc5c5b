// Files that are either fully written or not there at all: results and checkpoints are written to
// a temporary file beside the target, flushed to disk and renamed over it, so an interrupted run
// (a crash, a preemption, a full disk) never leaves a half-written file under the real name.
#pragma once
#include <cstdint>
#include <string>

namespace lmkit {

// Writes `bytes` to `path` atomically. Throws EnvironmentError naming the file on any failure
// (the temporary file is removed then).
void write_file_atomically(const std::string& path, const std::string& bytes);

// The temporary files ("<file>.tmp.<pid>") that writers killed mid-write (SIGKILL, the OOM killer,
// a power cut) left in `dir`, each removed when its process no longer runs on this machine: at
// paper scale each is a whole checkpoint. Files of live processes are left alone.
struct RemovedTemporaries {
  int files = 0;
  std::uintmax_t bytes = 0;
};
RemovedTemporaries remove_stale_temporaries(const std::string& dir);

// Refuses, before any stream opens it, a path that is not a readable file: "cannot open <what>
// '<path>': it is a folder, not a file" (a C++ stream would report a folder as "basic_filebuf::
// underflow error" or as missing), or "...: No such file or directory" and the like.
void require_readable_file(const std::string& path, const std::string& what = "file");

// The whole file as bytes; EnvironmentError "cannot open <what> '<path>': <reason>" otherwise, and
// for a path that is not a regular file (a pipe would block, a device never end) or that holds
// more than max_bytes.
std::string read_file(const std::string& path, const std::string& what = "file",
                      std::uintmax_t max_bytes = UINTMAX_MAX);

}  // namespace lmkit
