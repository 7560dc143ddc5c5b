#include "runtime/batch/batch_local.h"

#include <sched.h>

#include <cmath>
#include <sstream>

#include "runtime/core/number_text.h"
#include "runtime/core/work_progress.h"
#include "runtime/core/preemption.h"
#include "runtime/batch/process_pool.h"

namespace lmkit::training {
namespace {

// The CPUs this process may run on (its affinity, as nproc counts them).
std::int64_t usable_cpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) != 0) return 1;
  return std::max(1, CPU_COUNT(&set));
}

std::string plural(std::int64_t n, const char* word) { return integer_text(n) + " " + word + (n == 1 ? "" : "s"); }

}  // namespace

std::vector<std::map<std::string, std::string>> gpu_slots(const BatchOptions& o, const std::optional<std::string>& visible) {
  const std::int64_t gpus = o.gpus.value_or(0);
  if (!o.tasks_per_gpu && (gpus <= 1 || o.jobs)) return {};
  std::vector<std::string> names;
  std::string name;
  for (const char c : visible.value_or("") + ",") {
    if (c == ',' || c == ' ' || c == '\t') {
      if (!name.empty()) names.push_back(name);
      name.clear();
    } else {
      name += c;
    }
  }
  std::vector<std::map<std::string, std::string>> slots;
  for (std::int64_t round = 0; round < o.tasks_per_gpu.value_or(1); ++round) {
    for (std::int64_t g = 0; g < gpus; ++g) {
      slots.push_back({{"CUDA_VISIBLE_DEVICES", g < static_cast<std::int64_t>(names.size()) ? names[g] : integer_text(g)}});
    }
  }
  return slots;
}

int run_tasks_here(const BatchManifest& manifest, const std::vector<std::int64_t>& tasks, const BatchOptions& o,
                   std::ostream& out) {
  const char* visible = std::getenv("CUDA_VISIBLE_DEVICES");
  const auto slots = gpu_slots(o, visible ? std::optional<std::string>(visible) : std::nullopt);
  // No more at once than there are tasks: a slot (and its share of the threads) for a task that
  // does not exist helps nothing.
  const auto n = static_cast<std::int64_t>(tasks.size());
  const std::int64_t jobs = std::max<std::int64_t>(
      1, std::min(n, slots.empty() ? o.jobs.value_or(1) : static_cast<std::int64_t>(slots.size())));
  const std::int64_t threads = o.threads.value_or(std::max<std::int64_t>(1, usable_cpus() / jobs));
  const BatchPaths paths(manifest.out);
  std::vector<ProcessSpec> specs;
  for (const auto task : tasks) {
    ProcessSpec spec;
    spec.argv = {executable_path()};
    for (auto& a : task_arguments(manifest, task, threads)) spec.argv.push_back(std::move(a));
    spec.log_path = paths.log(task);
    spec.environment = {{"LMKIT_PROGRESS", "lines"}};
    specs.push_back(std::move(spec));
  }
  PoolOptions pool;
  pool.jobs = static_cast<std::size_t>(jobs);
  for (const auto& slot : slots) {
    if (static_cast<std::int64_t>(pool.slot_environment.size()) == jobs) break;
    pool.slot_environment.push_back(Environment(slot.begin(), slot.end()));
  }
  out << "running " << plural(n, "task") << " on this machine, " << jobs << " at a time (" << plural(threads, "thread")
      << " each"
      << (slots.empty() ? "" : o.tasks_per_gpu ? ", " + integer_text(*o.tasks_per_gpu) + " per GPU" : ", one GPU each")
      << "); logs in " << paths.logs << std::endl;
  std::int64_t finished = 0, failed = 0;
  double total_seconds = 0;
  const auto result = run_process_pool(specs, pool, [&](const ProcessEvent& e) {
    const auto task = tasks[e.index];
    const auto& cell = manifest.cells[static_cast<std::size_t>(task - 1)];
    if (e.kind == ProcessEvent::Kind::started) {
      out << "  start  task " << task << " (" << cell << ")"
          << (slots.empty() ? "" : " on GPU " + slots[e.slot].at("CUDA_VISIBLE_DEVICES")) << std::endl;
      return;
    }
    ++finished;
    total_seconds += e.seconds;
    std::string how;
    if (e.exit_code == 0) {
      how = "done";
    } else if (e.exit_code == kPreemptedExitStatus) {
      how = "preempted (state saved)";
    } else {
      ++failed;
      how = (e.signal != 0 ? "killed by signal " + integer_text(e.signal) : "failed (exit " + integer_text(e.exit_code) + ")") +
            ", log: " + paths.log(task);
    }
    const auto left = n - finished;
    const auto eta = left > 0 ? " · ETA " + format_duration(total_seconds / static_cast<double>(finished) *
                                                            std::ceil(static_cast<double>(left) / static_cast<double>(jobs)))
                              : std::string();
    out << "  [" << finished << "/" << n << "] task " << task << " (" << cell << ") " << how << " in "
        << format_duration(e.seconds) << eta << std::endl;
  });
  if (result.forwarded_signal != 0) {
    out << "stopped by signal " << result.forwarded_signal
        << ": the running tasks saved their state; run the same `lmkit batch` to resume" << std::endl;
    return kPreemptedExitStatus;
  }
  return failed > 0 ? 1 : 0;
}

}  // namespace lmkit::training
