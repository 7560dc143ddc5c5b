// Child processes for batch runs on this machine: a pool that runs at most `jobs` commands at a
// time (one per GPU slot when there are several), each with its output appended to its own log.
//
// The pool forwards SIGTERM and SIGUSR1 to the running children instead of dying: a cluster or a
// person stopping `lmkit batch` lets every task save its training state (the tasks exit with 75,
// "preempted") and the next `lmkit batch` resumes them. No new task starts after such a signal.
#pragma once
#include <functional>
#include <string>
#include <utility>
#include <vector>

namespace lmkit::lua {

using Environment = std::vector<std::pair<std::string, std::string>>;

struct ProcessSpec {
  std::vector<std::string> argv;  // argv[0] is the program's path (no PATH lookup)
  std::string log_path;           // stdout and stderr are appended here; stdin is /dev/null
  Environment environment;        // set on top of this process's environment
};

struct ProcessEvent {
  enum class Kind { started, exited } kind;
  std::size_t index = 0;  // into the specs
  std::size_t slot = 0;   // which of the pool's slots ran it
  int pid = 0;
  int exit_code = -1;     // exited normally: its status; killed by a signal: -1
  int signal = 0;         // the signal that killed it, 0 if none
  double seconds = 0;     // wall time, for `exited`
};

struct PoolOptions {
  std::size_t jobs = 1;
  // Per slot, variables added to that slot's children (e.g. CUDA_VISIBLE_DEVICES); when not
  // empty its size is the number of slots and `jobs` is ignored.
  std::vector<Environment> slot_environment;
  double poll_seconds = 0.1;
};

struct PoolResult {
  std::vector<ProcessEvent> exits;  // in the order the children ended
  int forwarded_signal = 0;         // the signal that stopped the pool early, 0 if none
  std::size_t not_started = 0;
};

// Runs every spec (in order, as slots free up) and waits for all of them. `on_event` sees each start
// and exit; if it throws, the running children get SIGTERM, are waited for, and the exception
// propagates. Throws EnvironmentError when a child cannot be started (missing program, log folder).
PoolResult run_process_pool(const std::vector<ProcessSpec>& specs, const PoolOptions& options,
                            const std::function<void(const ProcessEvent&)>& on_event);

// Whether a process with this id exists on this machine.
bool process_alive(int pid);
int current_pid();
std::string host_name();
// The running executable (/proc/self/exe), so that tasks run the same lmkit as the batch.
std::string executable_path();
// `path` made absolute against the working directory (not resolved: links stay as given).
std::string absolute_path(const std::string& path);

}  // namespace lmkit::lua
