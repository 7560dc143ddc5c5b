#include "runtime/batch/process_pool.h"

#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstring>
#include <map>
#include <thread>

#include "runtime/core/error.h"
#include "runtime/core/interruption.h"
#include "runtime/core/number_text.h"
#include "runtime/core/preemption.h"

extern char** environ;

namespace lmkit::training {
namespace {

using Clock = std::chrono::steady_clock;

// This process's environment with `extra` on top, as "KEY=VALUE" strings.
std::vector<std::string> child_environment(const Environment& base, const Environment& extra) {
  std::map<std::string, std::string> variables;
  for (char** e = environ; *e; ++e) {
    const std::string entry = *e;
    const auto eq = entry.find('=');
    if (eq != std::string::npos) variables[entry.substr(0, eq)] = entry.substr(eq + 1);
  }
  for (const auto& [key, value] : base) variables[key] = value;
  for (const auto& [key, value] : extra) variables[key] = value;
  std::vector<std::string> result;
  for (const auto& [key, value] : variables) result.push_back(key + "=" + value);
  return result;
}

std::vector<char*> c_strings(std::vector<std::string>& strings) {
  std::vector<char*> pointers;
  for (auto& s : strings) pointers.push_back(s.data());
  pointers.push_back(nullptr);
  return pointers;
}

// posix_spawn, not fork: this process has Torch's thread pools, and only exec is safe after fork.
int spawn(const ProcessSpec& spec, const Environment& slot_environment) {
  if (spec.argv.empty()) throw UsageError("batch: a task has an empty command line");
  auto argv_strings = spec.argv;
  auto env_strings = child_environment(spec.environment, slot_environment);
  auto argv = c_strings(argv_strings);
  auto envp = c_strings(env_strings);

  // Open the log here, so that a missing folder is our error message and not a silent child failure.
  const int log = ::open(spec.log_path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (log < 0) {
    throw EnvironmentError("batch: cannot open the task log '" + spec.log_path + "': " + std::strerror(errno));
  }
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&actions, log, STDOUT_FILENO);
  posix_spawn_file_actions_adddup2(&actions, log, STDERR_FILENO);
  posix_spawnattr_t attributes;
  posix_spawnattr_init(&attributes);
  sigset_t defaults, empty;
  sigemptyset(&defaults);
  sigaddset(&defaults, SIGTERM);
  sigaddset(&defaults, SIGUSR1);
  sigaddset(&defaults, SIGINT);
  sigemptyset(&empty);
  posix_spawnattr_setsigdefault(&attributes, &defaults);
  posix_spawnattr_setsigmask(&attributes, &empty);
  posix_spawnattr_setflags(&attributes, POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK);
  pid_t pid = 0;
  const int status = posix_spawn(&pid, argv[0], &actions, &attributes, argv.data(), envp.data());
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attributes);
  ::close(log);
  if (status != 0) {
    throw EnvironmentError("batch: cannot start '" + spec.argv[0] + "': " + std::strerror(status));
  }
  return pid;
}

struct Running {
  std::size_t index;
  std::size_t slot;
  Clock::time_point start;
};

void fill_exit(ProcessEvent& event, int status) {
  if (WIFEXITED(status)) {
    event.exit_code = WEXITSTATUS(status);
  } else if (WIFSIGNALED(status)) {
    event.signal = WTERMSIG(status);
  }
}

// Reaps one finished child of `running` without blocking; false when none has ended.
bool reap(std::map<int, Running>& running, ProcessEvent& event) {
  for (auto it = running.begin(); it != running.end(); ++it) {
    int status = 0;
    const pid_t pid = ::waitpid(it->first, &status, WNOHANG);
    if (pid != it->first) continue;
    event = ProcessEvent{ProcessEvent::Kind::exited, it->second.index, it->second.slot, pid};
    fill_exit(event, status);
    event.seconds = std::chrono::duration<double>(Clock::now() - it->second.start).count();
    running.erase(it);
    return true;
  }
  return false;
}

void signal_all(const std::map<int, Running>& running, int signal) {
  for (const auto& [pid, task] : running) ::kill(pid, signal);
}

void wait_all(std::map<int, Running>& running) {
  for (const auto& [pid, task] : running) {
    int status = 0;
    while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
  }
  running.clear();
}

}  // namespace

PoolResult run_process_pool(const std::vector<ProcessSpec>& specs, const PoolOptions& options,
                            const std::function<void(const ProcessEvent&)>& on_event) {
  const std::size_t slots = options.slot_environment.empty() ? std::max<std::size_t>(1, options.jobs)
                                                             : options.slot_environment.size();
  const Environment no_environment;
  std::vector<bool> slot_busy(slots, false);
  std::map<int, Running> running;
  PoolResult result;
  std::size_t next = 0;
  PreemptionGuard guard;  // SIGTERM/SIGUSR1 set a flag instead of killing the pool
  clear_preemption();
  // Ctrl-C stops the pool as an exception does: the running children get SIGTERM (they save their
  // state) and are waited for, then Interrupted goes on to the caller.
  InterruptibleScope interruptible;
  const auto poll = std::chrono::duration<double>(options.poll_seconds);

  try {
    while (next < specs.size() || !running.empty()) {
      interruptible.poll("the process pool");
      if (const int signal = preemption_signal(); signal != 0 && result.forwarded_signal == 0) {
        result.forwarded_signal = signal;
        signal_all(running, signal);
      }
      while (result.forwarded_signal == 0 && next < specs.size() && running.size() < slots) {
        std::size_t slot = 0;
        while (slot_busy[slot]) ++slot;
        const auto& slot_env = options.slot_environment.empty() ? no_environment : options.slot_environment[slot];
        const int pid = spawn(specs[next], slot_env);
        running[pid] = Running{next, slot, Clock::now()};
        slot_busy[slot] = true;
        on_event(ProcessEvent{ProcessEvent::Kind::started, next, slot, pid});
        ++next;
      }
      if (result.forwarded_signal != 0 && running.empty()) break;
      ProcessEvent event{};
      if (reap(running, event)) {
        slot_busy[event.slot] = false;
        result.exits.push_back(event);
        on_event(event);
      } else {
        std::this_thread::sleep_for(poll);
      }
    }
  } catch (...) {
    signal_all(running, SIGTERM);
    wait_all(running);
    throw;
  }
  result.not_started = specs.size() - next;
  clear_preemption();
  return result;
}






namespace {

PoolEvent pool_event(const ProcessEvent& e) {
  PoolEvent event{e.kind == ProcessEvent::Kind::started ? "started" : "exited", static_cast<std::int64_t>(e.index) + 1,
                  static_cast<std::int64_t>(e.slot) + 1, e.pid, std::nullopt, std::nullopt, std::nullopt};
  if (e.kind == ProcessEvent::Kind::exited) {
    if (e.signal == 0) {
      event.exit_code = e.exit_code;
    } else {
      event.signal = e.signal;
    }
    event.seconds = e.seconds;
  }
  return event;
}

Environment environment(const std::map<std::string, std::string>& variables) {
  return Environment(variables.begin(), variables.end());
}

}  // namespace

PoolSummary run_pool(const PoolRequest& request, const std::function<void(const PoolEvent&)>& on_event) {
  if (request.jobs < 1) throw UsageError("run_pool: jobs must be at least 1, got " + integer_text(request.jobs));
  // Every task is checked before the first starts: a bad one found hours into a batch would stop it.
  for (std::size_t i = 0; i < request.tasks.size(); ++i) {
    const auto& task = request.tasks[i];
    if (task.argv.empty() || task.argv.front().empty() || task.log.empty()) {
      throw UsageError("run_pool: task " + integer_text(i + 1) + " needs argv (a command, argv[1] its path) and log (a file)");
    }
  }
  std::vector<ProcessSpec> specs;
  for (const auto& task : request.tasks) specs.push_back({task.argv, task.log, environment(task.env)});
  PoolOptions options;
  options.jobs = static_cast<std::size_t>(request.jobs);
  options.poll_seconds = request.poll_seconds;
  for (const auto& slot : request.slots) options.slot_environment.push_back(environment(slot));
  const auto result = run_process_pool(specs, options, [&](const ProcessEvent& e) { if (on_event) on_event(pool_event(e)); });
  PoolSummary summary{{}, result.forwarded_signal, static_cast<std::int64_t>(result.not_started)};
  for (const auto& e : result.exits) summary.exits.push_back(pool_event(e));
  return summary;
}


}  // namespace lmkit::training
