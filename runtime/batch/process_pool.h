// Child processes for batch runs on this machine: a pool that runs at most `jobs` commands at a
// time (one per GPU slot when there are several), each with its output appended to its own log.
//
// The pool forwards SIGTERM and SIGUSR1 to the running children instead of dying: a cluster or a
// person stopping `lmkit batch` lets every task save its training state (the tasks exit with 75,
// "preempted") and the next `lmkit batch` resumes them. No new task starts after such a signal.
#pragma once
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "runtime/config/declared_result.h"
#include "runtime/core/process_facts.h"

namespace lmkit::training {

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

// The pool as a script asks for it (lmkit.process.run_pool): tasks with their environments as
// tables, events and exits with 1-based task and slot numbers.
struct PoolTask {
  std::vector<std::string> argv;
  std::string log;
  std::map<std::string, std::string> env;
};
inline auto declared_result(config::Tag<PoolTask>) {
  return config::result_table(config::result_field("argv", &PoolTask::argv, "the command; argv[1] is a path"),
                              config::result_field("log", &PoolTask::log, "the file its output is appended to"),
                              config::result_field("env", &PoolTask::env, "variables set for it"));
}
struct PoolRequest {
  std::vector<PoolTask> tasks;
  std::int64_t jobs = 1;
  std::vector<std::map<std::string, std::string>> slots;
  double poll_seconds = 0.1;
};
inline auto declared_result(config::Tag<PoolRequest>) {
  using config::result_field;
  return config::result_table(result_field("tasks", &PoolRequest::tasks, "{argv=, log=, env=} per task"),
                              result_field("jobs", &PoolRequest::jobs, "tasks at a time"),
                              result_field("slots", &PoolRequest::slots, "one environment per slot (its size is then the jobs)"),
                              result_field("poll_seconds", &PoolRequest::poll_seconds, "how often children are checked"));
}
struct PoolEvent {
  std::string kind;  // "started" or "exited"
  std::int64_t task = 0, slot = 0, pid = 0;
  std::optional<std::int64_t> exit_code, signal;
  std::optional<double> seconds;
};
inline auto declared_result(config::Tag<PoolEvent>) {
  using config::result_field;
  return config::result_table(
      result_field("kind", &PoolEvent::kind, "\"started\" or \"exited\""), result_field("task", &PoolEvent::task, "1-based"),
      result_field("slot", &PoolEvent::slot, "1-based"), result_field("pid", &PoolEvent::pid, "the child's"),
      result_field("exit_code", &PoolEvent::exit_code, "exited normally: its status"),
      result_field("signal", &PoolEvent::signal, "killed: the signal"), result_field("seconds", &PoolEvent::seconds, "wall time"));
}
struct PoolSummary {
  std::vector<PoolEvent> exits;
  std::int64_t signal = 0;
  std::int64_t not_started = 0;
};
inline auto declared_result(config::Tag<PoolSummary>) {
  return config::result_table(config::result_field("exits", &PoolSummary::exits, "in the order the children ended"),
                              config::result_field("signal", &PoolSummary::signal, "the signal that stopped the pool early, 0 if none"),
                              config::result_field("not_started", &PoolSummary::not_started, "tasks never started"));
}
PoolSummary run_pool(const PoolRequest& request, const std::function<void(const PoolEvent&)>& on_event);


}  // namespace lmkit::training
