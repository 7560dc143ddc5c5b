#include "runtime/batch/batch_commands.h"

#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <memory>

#include "runtime/config/cli_settings.h"
#include "runtime/core/error.h"
#include "runtime/core/file_lock.h"
#include "runtime/core/folders.h"
#include "runtime/core/number_text.h"
#include "runtime/core/warning.h"
#include "runtime/batch/batch_local.h"
#include "runtime/batch/batch_manifest.h"
#include "runtime/batch/batch_slurm.h"
#include "runtime/batch/batch_task_state.h"
#include "runtime/batch/process_pool.h"
#include "runtime/batch/shell_command.h"

extern char** environ;

namespace lmkit::training {
namespace {

// The batch's settings for its tasks: out=DIR names the folder and is each task's own.
std::vector<std::string> task_settings(const std::vector<std::string>& sets) {
  std::vector<std::string> kept;
  for (const auto& s : sets) {
    if (config::parse_setting(s).key != "out") kept.push_back(s);
  }
  return kept;
}

// The folder's work under its lock.
int run_locked(const BatchGrid& grid, const std::string& folder, const BatchOptions& o, std::ostream& out) {
  auto manifest = reconcile_batch_manifest(grid, folder, task_settings(o.sets), o.backend);
  const BatchPaths paths(folder);
  if (!o.dry_run) {
    // The folder's record gets its batch section (a dry run leaves the folder as it is).
    make_folder(paths.tasks);
    make_folder(paths.logs);
    write_batch_manifest(manifest);
  }

  std::vector<std::int64_t> to_run;
  std::int64_t busy = 0, done = 0;
  for (const auto& v : task_views(manifest, observe_tasks(manifest))) {
    if (is_runnable(v.state)) {
      to_run.push_back(v.task);
    } else if (v.state == TaskState::done) {
      ++done;
    } else {
      ++busy;
    }
  }
  const auto total = static_cast<std::int64_t>(grid.cells.size());
  out << manifest.name << ": " << total << " tasks in " << folder << " — " << done << " done, " << busy
      << " running or queued, " << to_run.size() << " to run" << std::endl;
  int status = 0;
  if (to_run.empty()) {
    out << (busy > 0 ? "nothing to start: `lmkit status " + shell_word(folder) + "` follows the rest"
                     : "nothing to run: every task is done; `lmkit report " + shell_word(folder) + "` renders the report")
        << "\n";
  } else if (o.backend == "local") {
    if (o.dry_run) {
      for (const auto task : to_run) {
        out << "would run: lmkit";
        for (const auto& a : task_arguments(manifest, task, o.threads)) out << " " << shell_word(a);
        out << "\n";
      }
      return 0;
    }
    status = run_tasks_here(manifest, to_run, o, out);
  } else {
    status = submit_slurm_array(manifest, to_run, o, out);
    if (status == 0 && o.wait && !o.dry_run) {
      const auto final_views = wait_for_slurm(manifest, o, out);
      status = count_tasks(final_views)[TaskState::done] == total ? 0 : 1;
    }
  }
  if (o.backend == "local" || o.wait) {
    const auto facts = observe_tasks(manifest);
    const auto views = task_views(manifest, facts);
    print_task_table(out, manifest, views, facts.queue.has_value());
    if (count_tasks(views)[TaskState::done] == total) {
      out << "all " << total << " tasks done: `lmkit report " << shell_word(folder) << "` renders the report\n";
    }
  }
  out.flush();
  return status;
}

}  // namespace

int run_batch(const BatchGrid& grid, const BatchOptions& given) {
  const auto o = completed_batch_options(given);
  if (grid.cells.empty()) throw UsageError(grid.path + "'s grid has no cells: nothing to run");
  if (grid.name.find_first_of("\n\r") != std::string::npos) {
    throw UsageError(grid.path + "'s name holds a line break; the batch's job names and folders need one line");
  }
  for (const auto& cell : grid.cells) {
    if (!is_safe_cell_id(cell)) {
      throw UsageError(grid.path + " has a cell id '" + cell + "' that names no folder under cells/");
    }
  }
  if (o.dry_run) {
    for (const auto& line : grid.plan) std::cout << line << "\n";
  } else if (!grid.problems.empty()) {
    std::string text;
    for (const auto& problem : grid.problems) text += (text.empty() ? "" : "; ") + problem;
    if (o.backend == "local") {
      throw UsageError(grid.name + ": nothing started, its tasks would fail: " + text +
                       ". (lmkit batch --dry-run shows the plan.)");
    }
    // The cluster's nodes may see other files than this login node (staged data, their own
    // LMKIT_DATA): said, not refused.
    warn("lmkit batch: " + grid.name + ": as seen from this machine, " + text +
         ". The tasks fail unless the cluster's nodes have it.");
  }
  const auto folder = absolute_path(grid.out);
  if (o.backend == "slurm" && folder.find_first_of("\n\r\"\\") != std::string::npos) {
    // The folder is an #SBATCH --output line of the job script, which Slurm reads with its own quoting.
    throw UsageError("the batch folder '" + folder + "' holds a line break, a '\"' or a '\\', which a Slurm job script "
                     "cannot carry in its #SBATCH lines; use another folder (--set out=DIR)");
  }
  const BatchPaths paths(folder);
  // A dry run makes no folder (and, where there is none, has no batch to keep from another).
  if (!o.dry_run) make_folder(paths.batch);
  // One batch process per folder: a second `lmkit batch` on it (at the same moment, or while the first
  // still runs its tasks) is refused before it reads the tasks' states.
  std::unique_ptr<FileLock> lock;
  try {
    if (is_folder(paths.batch)) lock = std::make_unique<FileLock>(paths.batch, "lmkit batch " + grid.path);
  } catch (const UsageError& e) {
    throw UsageError(std::string(e.what()) + "\n`lmkit status " + folder +
                     "` follows the batch that holds it.");
  }
  return run_locked(grid, folder, o, std::cout);
}

int batch_status(const std::string& dir) {
  const auto manifest = read_batch_manifest(absolute_path(dir));
  const auto facts = observe_tasks(manifest);
  const auto views = task_views(manifest, facts);
  print_task_table(std::cout, manifest, views, facts.queue.has_value());
  std::cout.flush();
  const auto counts = count_tasks(views);
  if (counts[TaskState::done] == static_cast<std::int64_t>(views.size())) return 0;
  if (counts[TaskState::failed] + counts[TaskState::lost] > 0) return 1;
  return 3;
}

int batch_report(const std::string& dir) {
  const auto manifest = read_batch_manifest(absolute_path(dir));
  std::vector<std::string> argv = {executable_path()};
  for (auto& a : task_arguments(manifest, std::nullopt, std::nullopt)) argv.push_back(std::move(a));
  argv.insert(argv.end(), {"--set", "report_only=true"});
  std::vector<char*> pointers;
  for (auto& a : argv) pointers.push_back(a.data());
  pointers.push_back(nullptr);
  std::fflush(stdout);
  pid_t pid = 0;
  const int error = posix_spawn(&pid, argv[0].c_str(), nullptr, nullptr, pointers.data(), environ);
  if (error != 0) throw EnvironmentError("cannot start " + argv[0] + ": " + std::strerror(error));
  int status = 0;
  while (waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) throw EnvironmentError("lost its child process: " + std::string(std::strerror(errno)));
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

}  // namespace lmkit::training
