#include "runtime/batch/batch_options.h"

#include <algorithm>
#include <cstdlib>
#include <utility>
#include <utility>

#include "runtime/config/cli_settings.h"
#include "runtime/core/device.h"
#include "runtime/core/error.h"
#include "runtime/core/warning.h"
#include "runtime/core/number_text.h"

namespace lmkit::training {
namespace {

using config::Range;

// The options that only one backend reads: given for the other they would do nothing.
const std::vector<std::string> kSlurmOnly = {"partition", "account",     "time", "cpus_per_task", "gpus_per_task", "requeue",
                                             "signal_lead", "sbatch_args", "wait", "wait_timeout",  "poll_seconds"};
const std::vector<std::string> kLocalOnly = {"tasks_per_gpu", "gpus", "threads"};

std::string flag(const std::string& name) {
  std::string text = "--" + (name == "sbatch_args" ? std::string("sbatch_arg") : name);
  std::replace(text.begin(), text.end(), '_', '-');
  return text;
}

}  // namespace

// Bounds where machines are: a count past them is a typo (--jobs 99999999999 was accepted, then
// ran out of memory making that many process slots). 100,000 tasks at once is more than a Slurm
// array holds by default (MaxArraySize 1001); 256 GPUs, more than any node has.
constexpr double kMostJobs = 100000, kMostGpus = 256, kMostSeconds = 7 * 24 * 3600;

const config::BoundOptions<BatchOptions>& declared_options(config::Tag<BatchOptions>) {
  using B = BatchOptions;
  static const config::BoundOptions<BatchOptions> options(
      "lmkit batch",
      {
          config::BoundOption<B>{"recipe", &B::recipe, "the recipe (a .lua file or a recipe's name) whose cells become the tasks"}.required(),
          {"sets", &B::sets, "recipe settings KEY=VALUE for the grid and every task (out=DIR is the batch folder)"},
          {"backend", &B::backend, config::OneOf{{"local", "slurm"}}, "local: processes on this machine; slurm: one sbatch job array"},
          {"jobs", &B::jobs, Range{1.0, kMostJobs, false, false}, "at most this many tasks at once (local: default 1, or one per GPU; slurm: the array's %limit)"},
          {"tasks_per_gpu", &B::tasks_per_gpu, Range{1.0, kMostGpus, false, false}, "local: this many tasks at once on each GPU (a small model leaves a GPU mostly idle)"},
          {"gpus", &B::gpus, Range{0.0, kMostGpus, false, false}, "local: the GPUs to share among the tasks (default: the CUDA devices this process sees)"},
          {"threads", &B::threads, Range{1.0, 1024.0, false, false}, "local: CPU threads per task (default: cores / tasks at once)"},
          {"partition", &B::partition, "slurm: the partition"},
          {"account", &B::account, "slurm: the account"},
          {"time", &B::time, "slurm: the time limit per task, e.g. 04:00:00"},
          {"cpus_per_task", &B::cpus_per_task, Range{1.0, kMostJobs, false, false}, "slurm: CPUs per task (also the task's threads)"},
          {"gpus_per_task", &B::gpus_per_task, Range{0.0, kMostGpus, false, false}, "slurm: GPUs per task"},
          {"requeue", &B::requeue, "slurm: a task stopped by SIGTERM/SIGUSR1 saves its state and requeues itself to resume"},
          {"signal_lead", &B::signal_lead, Range{1.0, kMostSeconds, false, false}, "slurm: seconds before the time limit at which a task is told to save its state (SIGUSR1)"},
          {"sbatch_args", &B::sbatch_args, "slurm: extra #SBATCH lines, e.g. --mem=32G"},
          {"wait", &B::wait, "slurm: wait until every submitted task has ended, showing progress"},
          {"wait_timeout", &B::wait_timeout, Range::positive(), "slurm: with wait, give up waiting after this many seconds"},
          {"poll_seconds", &B::poll_seconds, Range::at_least(0.1), "slurm: with wait, seconds between looks at the queue (squeue asks the cluster's controller)"},
          {"dry_run", &B::dry_run, "show what would run or be submitted (on Slurm, with the job script written to read); change nothing else"},
      },
      &B::given);
  return options;
}

BatchOptions completed_batch_options(BatchOptions options) {
  check_batch_options(options);
  const std::int64_t seen = cuda_device_count();
  if (!options.gpus) {
    options.gpus = seen;
  } else if (options.backend == "local" && *options.gpus > seen) {
    // More GPUs than this process sees: a scheduler's CUDA_VISIBLE_DEVICES is a hard limit; without
    // one the tasks get devices 0..gpus-1 all the same (a machine whose GPUs this build cannot see).
    const char* visible = std::getenv("CUDA_VISIBLE_DEVICES");
    const std::string seen_text = integer_text(seen) + " CUDA device" + (seen == 1 ? "" : "s");
    if (visible != nullptr) {
      throw UsageError("--gpus " + integer_text(*options.gpus) + ", but CUDA_VISIBLE_DEVICES=" + visible + " gives this process " +
                       seen_text + "; give at most " + integer_text(seen));
    }
    static bool warned = false;  // once per process: the command line and the run check the same options
    if (!std::exchange(warned, true)) warn("lmkit batch: --gpus " + integer_text(*options.gpus) + " but this process sees " + seen_text +
         " (`lmkit --version` says why); the tasks get CUDA_VISIBLE_DEVICES 0 to " + integer_text(*options.gpus - 1) +
         " all the same");
  }
  check_batch_options(options);
  return options;
}

void check_batch_options(const BatchOptions& o) {
  const bool local = o.backend == "local";
  for (const auto& name : local ? kSlurmOnly : kLocalOnly) {
    if (o.given.count(name) == 0) continue;
    if (local) {
      throw UsageError(flag(name) + " is the Slurm backend's; add --backend slurm, or leave it out");
    }
    throw UsageError(flag(name) + " is the local backend's" +
                     (name == "tasks_per_gpu" ? "; on Slurm, tasks share a GPU through the cluster's GPU sharing "
                                                "(e.g. --sbatch-arg=--gres=shard:1, docs/cluster.md \"Sharing a GPU\")"
                      : name == "threads"     ? "; on Slurm a task's threads are its --cpus-per-task"
                                              : "; on Slurm, --gpus-per-task gives each task its GPUs"));
  }
  if (o.tasks_per_gpu && o.jobs) {
    throw UsageError("give --jobs or --tasks-per-gpu, not both (--tasks-per-gpu " +
                     integer_text(*o.tasks_per_gpu) + " runs " + integer_text(*o.tasks_per_gpu) + " × GPUs at once)");
  }
  if (o.tasks_per_gpu && o.gpus && *o.gpus < 1) {
    throw UsageError("--tasks-per-gpu shares GPUs among tasks, but this process sees no CUDA device "
                     "(`lmkit --version` says why); --jobs N runs N tasks at once on the CPU");
  }
  if ((o.wait_timeout || o.given.count("poll_seconds")) && !o.wait) {
    throw UsageError(std::string(o.wait_timeout ? "--wait-timeout" : "--poll-seconds") + " needs --wait");
  }
  // Each is a line of the job script: a line break in one would add lines of its own there.
  std::vector<std::pair<std::string, std::string>> script_lines = {
      {"partition", o.partition.value_or("")}, {"account", o.account.value_or("")}, {"time", o.time.value_or("")}};
  for (const auto& extra : o.sbatch_args) script_lines.emplace_back("sbatch_args", extra);
  for (const auto& [name, value] : script_lines) {
    if (value.find_first_of("\n\r") != std::string::npos) {
      throw UsageError(flag(name) + " '" + value + "' holds a line break: it becomes a line of the job script; give one line");
    }
  }
  for (const auto& [name, value] : {std::pair{"partition", o.partition}, {"account", o.account}, {"time", o.time}}) {
    if (value && value->find_first_not_of(" \t") == std::string::npos) {
      throw UsageError(flag(name) + " is empty: give a value, or leave the option out for Slurm's default");
    }
  }
  bool out_given = false;
  for (const auto& s : o.sets) {
    const auto setting = config::parse_setting(s);  // the key as the recipe reads it (trimmed, checked)
    if (setting.key == "task") throw UsageError("--set " + s + " is the batch's own (each task gets its task=i); leave it out");
    if (setting.key == "report_only") {
      throw UsageError("--set " + s + " is the batch's own (`lmkit report DIR` renders the report); leave it out");
    }
    if (setting.key == "out") {
      if (out_given) throw UsageError("--set out= is given twice: the batch has one folder");
      if (setting.text.find_first_not_of(" \t") == std::string::npos) throw UsageError("--set out= is empty: give the batch's folder");
      out_given = true;
    }
    if (setting.key == "dry_run") {
      throw UsageError("--set dry_run is lmkit run's; lmkit batch --dry-run shows what would run");
    }
  }
}

const config::BoundOptions<BatchGrid>& declared_options(config::Tag<BatchGrid>) {
  using G = BatchGrid;
  static const config::BoundOptions<BatchGrid> options(
      "batch grid", {
                        config::BoundOption<G>{"path", &G::path, "the recipe's absolute path"}.required(),
                        {"name", &G::name, "the recipe's name"},
                        {"description", &G::description, "what the recipe reproduces"},
                        config::BoundOption<G>{"out", &G::out, "the recipe's output folder: the batch folder"}.required(),
                        config::BoundOption<G>{"cells", &G::cells, "the cells' ids; task i is cell i"}.required(),
                        {"settings", &G::settings, "the recipe's resolved settings, JSON text of an object"},
                        {"defaults", &G::defaults, "the defaults of the recipe's declared settings, JSON text of an object"},
                        {"plan", &G::plan, "what the tasks still to run need, as a dry run shows it"},
                        {"problems", &G::problems, "what would fail tasks (data missing), as seen from this machine"},
                    });
  return options;
}

}  // namespace lmkit::training
