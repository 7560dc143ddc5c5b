#include "runtime/batch/batch_slurm.h"

#include <algorithm>
#include <chrono>

#include "runtime/core/error.h"
#include "runtime/core/folders.h"
#include "runtime/core/atomic_file.h"
#include "runtime/core/number_text.h"
#include "runtime/core/clock.h"
#include "runtime/core/work_progress.h"
#include "runtime/batch/process_pool.h"
#include "runtime/batch/shell_command.h"

namespace lmkit::training {
namespace {

// The task's part of the job script; COMMAND and REQUEUE are filled in.
constexpr const char* kTaskBody = R"script(set -u
task=${SLURM_ARRAY_TASK_ID:?this script runs as a Slurm array task: sbatch --array=...}
me=${SLURM_ARRAY_JOB_ID}_${task}   # never $SLURM_JOB_ID: for one task of the array it names the whole array
echo "== lmkit task $task ($me) on $(hostname), attempt $(( ${SLURM_RESTART_COUNT:-0} + 1 )), $(date -u +%FT%TZ)"
child= signalled=
# SIGTERM (preemption, scancel --signal) or SIGUSR1 (before the time limit): lmkit saves its training
# state at the next step and exits with 75.
forward() { signalled=$1; [ -n "$child" ] && kill -s "$1" "$child" 2>/dev/null; }
trap 'forward TERM' TERM
trap 'forward USR1' USR1
COMMAND --threads "${SLURM_CPUS_PER_TASK:-1}" --set "task=$task" &
child=$!
status=0
wait "$child" || status=$?
# A trapped signal ends `wait` early: wait again until lmkit has saved its state and exited.
while kill -0 "$child" 2>/dev/null; do status=0; wait "$child" || status=$?; done
if [ -n "$signalled" ] && [ "$status" != 0 ]; then
  if REQUEUE; then
    echo "== $signalled received, lmkit exited with $status: requeueing $me to resume"
    scontrol requeue "$me" && exit 0
  fi
  echo "== $signalled received, lmkit exited with $status: not requeued; \`lmkit batch\` again resumes it"
fi
echo "== task $task ended with status $status, $(date -u +%FT%TZ)"
exit "$status"
)script";

void replace_all(std::string& text, const std::string& what, const std::string& with) {
  for (auto at = text.find(what); at != std::string::npos; at = text.find(what, at + with.size())) {
    text.replace(at, what.size(), with);
  }
}

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace

std::string index_ranges(std::vector<std::int64_t> indices) {
  std::sort(indices.begin(), indices.end());
  std::string text;
  for (std::size_t i = 0; i < indices.size();) {
    std::size_t j = i;
    while (j + 1 < indices.size() && indices[j + 1] == indices[j] + 1) ++j;
    text += (text.empty() ? "" : ",") + integer_text(indices[i]) + (i == j ? "" : "-" + integer_text(indices[j]));
    i = j + 1;
  }
  return text;
}

std::string sbatch_script(const BatchManifest& manifest, const BatchOptions& o) {
  std::string text = "#!/bin/bash\n# lmkit batch: recipe " + manifest.name +
                     ", one Slurm array task per recipe task (array index = task).\n"
                     "# Written by `lmkit batch --backend slurm`; it submits this file with --array=<the tasks to run>.\n"
                     "#SBATCH --job-name=\"lmkit-" + manifest.name + "\"\n#SBATCH --output=\"" + BatchPaths(manifest.out).logs +
                     "/task-%a.log\"\n#SBATCH --open-mode=append\n#SBATCH --ntasks=1\n";
  const auto option = [&](const char* name, const std::string& value) {
    if (!value.empty()) text += "#SBATCH --" + std::string(name) + "=" + value + "\n";
  };
  option("partition", o.partition.value_or(""));
  option("account", o.account.value_or(""));
  option("time", o.time.value_or(""));
  if (o.cpus_per_task) option("cpus-per-task", integer_text(*o.cpus_per_task));
  if (o.gpus_per_task && *o.gpus_per_task > 0) option("gpus-per-task", integer_text(*o.gpus_per_task));
  if (o.requeue) text += "#SBATCH --requeue\n";
  // The signal before the time limit goes to this script (B:), which passes it on to lmkit.
  option("signal", "B:USR1@" + integer_text(o.signal_lead));
  for (const auto& extra : o.sbatch_args) text += "#SBATCH " + extra + "\n";
  std::string command = shell_quote(manifest.lmkit);
  for (const auto& a : task_arguments(manifest, std::nullopt, std::nullopt)) command += " " + shell_quote(a);
  std::string body = kTaskBody;
  // REQUEUE first: the command's own text (a path, a --set value) may hold that word.
  replace_all(body, "REQUEUE", o.requeue ? "true" : "false");
  replace_all(body, "COMMAND", command);
  return text + body;
}

int submit_slurm_array(BatchManifest& manifest, const std::vector<std::int64_t>& tasks, const BatchOptions& o,
                       std::ostream& out) {
  // A dry run plans for a cluster from anywhere (a laptop without Slurm): it writes the job script
  // (batch/slurm/array.dry-run.sbatch, to read) and shows the command; only a submission needs sbatch.
  if (!o.dry_run && !have_command("sbatch")) {
    throw EnvironmentError("`sbatch` is not on PATH: run on a Slurm login node (lmkit batch --dry-run plans the "
                           "submission anywhere), or use --backend local");
  }
  const BatchPaths paths(manifest.out);
  make_folder(paths.slurm);
  // A dry run's script lies beside the last submission's, which it never replaces.
  const auto script = paths.slurm + (o.dry_run ? "/array.dry-run.sbatch" : "/array.sbatch");
  write_file_atomically(script, sbatch_script(manifest, o));
  auto array = index_ranges(tasks);
  if (o.jobs) array += "%" + integer_text(*o.jobs);
  const auto command = "sbatch --parsable --chdir=" + shell_quote(absolute_path(".")) + " --array=" + array + " " +
                       shell_quote(script);
  if (o.dry_run) {
    out << "would submit: " << command << "\n";
    return 0;
  }
  const auto output = run_shell(command);
  std::string job;
  if (output && output->status == 0) {
    const auto start = output->text.find_first_not_of(" \t\n");
    const auto end = output->text.find_first_not_of("0123456789", start == std::string::npos ? 0 : start);
    if (start != std::string::npos) job = output->text.substr(start, end - start);
  }
  if (job.empty()) {
    const auto said = output ? output->text.substr(0, output->text.find('\n')) : std::string("could not start a shell");
    throw EnvironmentError("sbatch failed (exit " + integer_text(output ? output->status : -1) + "): " +
                           said + "\n  command: " + command);
  }
  manifest.slurm_jobs.push_back({job, tasks, array, utc_timestamp()});
  write_batch_manifest(manifest);
  out << "submitted Slurm array job " << job << ": tasks " << array << " (script " << script << ")\n";
  return 0;
}

std::vector<TaskView> wait_for_slurm(const BatchManifest& manifest, const BatchOptions& o, std::ostream& out) {
  const auto start = std::chrono::steady_clock::now();
  std::string previous;
  while (true) {
    const auto facts = observe_tasks(manifest);
    if (!facts.queue) {
      // Without Slurm's queue, queued tasks look pending and dead ones running: waiting would guess.
      throw EnvironmentError("--wait: cannot read Slurm's queue (squeue missing or failing); the jobs go on: "
                             "`lmkit status " + manifest.out + "`");
    }
    auto views = task_views(manifest, facts);
    const auto line = task_summary(views);
    if (line != previous) {
      out << "  [" << format_duration(seconds_since(start)) << "] " << line << std::endl;
      previous = line;
    }
    const auto counts = count_tasks(views);
    if (counts[TaskState::running] + counts[TaskState::queued] + counts[TaskState::requeued] == 0) return views;
    if (o.wait_timeout && seconds_since(start) > *o.wait_timeout) {
      out << "stopped waiting after " << format_duration(*o.wait_timeout) << "; the jobs go on: `lmkit status "
          << manifest.out << "`\n";
      return views;
    }
    sleep_seconds(o.poll_seconds);
  }
}

}  // namespace lmkit::training
