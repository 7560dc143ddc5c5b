#include "runtime/batch/batch_task_state.h"

#include <algorithm>
#include <cstdlib>
#include <ctime>
#include <set>
#include <sstream>

#include <fmt/format.h>

#include "runtime/config/json_text.h"
#include "runtime/core/atomic_file.h"
#include "runtime/core/file_lock.h"
#include "runtime/core/folders.h"
#include "runtime/core/interruption.h"
#include "runtime/core/preemption.h"
#include "runtime/core/number_text.h"
#include "runtime/batch/process_pool.h"
#include "runtime/batch/shell_command.h"

namespace lmkit::training {
namespace {

using nlohmann::json;

// A JSON object from `path`: null when the file is missing; `damaged` says why when it is there but
// is no JSON object (edited by hand, cut short). EnvironmentError when it cannot be read.
json read_object(const std::string& path, std::string* damaged) {
  if (!path_exists(path)) return nullptr;
  // A file that cannot be read (permissions) is an error naming it: never "damaged", which the next
  // batch would overwrite by running the task again.
  const auto text = read_file(path);
  try {
    auto value = config::parse_json_text(text);
    if (value.is_object()) return value;
  } catch (const config::JsonTextError&) {
  }
  if (damaged != nullptr) *damaged = "not a JSON object";
  return nullptr;
}

std::string text_of(const json& record, const char* key) {
  if (!record.is_object() || !record.contains(key)) return "";
  const auto& v = record[key];
  if (v.is_string()) return v.get<std::string>();
  if (v.is_number_integer()) return integer_text(v.get<std::int64_t>());
  return "";
}

std::optional<std::int64_t> integer_of(const json& record, const char* key) {
  if (!record.is_object() || !record.contains(key) || !record[key].is_number()) return std::nullopt;
  return record[key].is_number_integer() ? record[key].get<std::int64_t>() : static_cast<std::int64_t>(record[key].get<double>());
}

// Slurm's states of a task that waits to run.
bool is_waiting(const std::string& slurm_state) {
  static const std::set<std::string> waiting = {"PENDING",  "REQUEUED",      "REQUEUE_HOLD", "REQUEUE_FED",
                                                "CONFIGURING", "RESV_DEL_HOLD", "SUSPENDED"};
  return waiting.count(slurm_state) > 0;
}

// The Slurm id of task i under the newest submission that included it.
std::string slurm_id_of(const BatchManifest& manifest, std::int64_t task) {
  for (auto job = manifest.slurm_jobs.rbegin(); job != manifest.slurm_jobs.rend(); ++job) {
    if (std::find(job->tasks.begin(), job->tasks.end(), task) != job->tasks.end()) {
      return job->job + "_" + integer_text(task);
    }
  }
  return "";
}

TaskState from_record(const json& record, std::int64_t task, const TaskFacts& facts) {
  const auto state = text_of(record, "state");
  if (state == "running") {
    // A Slurm task not in the queue is gone without recording its end, unless the queue is unknown.
    if (!text_of(record, "slurm_job").empty()) return facts.queue ? TaskState::lost : TaskState::running;
    if (text_of(record, "host") != facts.host) return TaskState::running;  // another machine's: not seen from here
    // The task's own lock first: a pid can be alive again as another process.
    if (facts.task_held) return facts.task_held(task) ? TaskState::running : TaskState::lost;
    const auto pid = integer_of(record, "pid");
    if (pid && facts.alive && !facts.alive(*pid)) return TaskState::lost;
    return TaskState::running;
  }
  if (state == "done") return TaskState::lost;  // said done but left no result.json (deleted since?)
  if (state == "preempted") return TaskState::preempted;
  if (state == "failed") return TaskState::failed;
  return TaskState::lost;  // a state lmkit does not write: the record was edited
}

std::string first_line(const std::string& text) { return text.substr(0, text.find('\n')); }

}  // namespace

const char* task_state_name(TaskState state) {
  switch (state) {
    case TaskState::done: return "done";
    case TaskState::running: return "running";
    case TaskState::queued: return "queued";
    case TaskState::requeued: return "requeued";
    case TaskState::preempted: return "preempted";
    case TaskState::failed: return "failed";
    case TaskState::lost: return "lost";
    case TaskState::pending: return "pending";
  }
  return "?";
}

bool is_runnable(TaskState state) {
  return state == TaskState::pending || state == TaskState::failed || state == TaskState::lost ||
         state == TaskState::preempted;
}

std::vector<TaskView> task_views(const BatchManifest& manifest, const TaskFacts& facts) {
  const BatchPaths paths(manifest.out);
  std::vector<TaskView> views;
  for (std::size_t i = 0; i < manifest.cells.size(); ++i) {
    TaskView v;
    v.task = static_cast<std::int64_t>(i + 1);
    v.cell = manifest.cells[i];
    v.log = paths.log(v.task);
    v.record = read_object(paths.task_record(v.task), nullptr);
    v.attempts = integer_of(v.record, "attempt").value_or(0);
    v.slurm_id = slurm_id_of(manifest, v.task);
    std::string in_queue;
    if (facts.queue && !v.slurm_id.empty() && facts.queue->count(v.slurm_id)) in_queue = facts.queue->at(v.slurm_id);
    std::string damaged;
    const bool done = !read_object(paths.result(v.cell), &damaged).is_null();
    if (done) {
      v.state = TaskState::done;
    } else if (!damaged.empty() && in_queue.empty()) {
      v.state = TaskState::failed;  // edited or cut short by hand: named, and run again by the next `lmkit batch`
      v.problem = paths.result(v.cell) + " is damaged (" + damaged + "); `lmkit batch` runs the task again";
    } else if (!in_queue.empty()) {
      v.state = !is_waiting(in_queue)                       ? TaskState::running
                : text_of(v.record, "state") == "preempted" ? TaskState::requeued
                                                            : TaskState::queued;
    } else if (!v.record.is_null()) {
      v.state = from_record(v.record, v.task, facts);
    }
    views.push_back(std::move(v));
  }
  return views;
}

TaskFacts observe_tasks(const BatchManifest& manifest) {
  TaskFacts facts;
  facts.host = host_name();
  facts.alive = [](std::int64_t pid) { return process_alive(static_cast<int>(pid)); };
  facts.task_held = [tasks = BatchPaths(manifest.out).tasks](std::int64_t task) {
    return FileLock::holder(tasks + "/" + integer_text(task)).has_value();
  };
  if (manifest.slurm_jobs.empty() || !have_command("squeue")) return facts;
  const auto output = run_shell("squeue -h -r --me -o '%i %T'");
  if (!output || output->status != 0) return facts;
  std::set<std::string> ours;
  for (const auto& job : manifest.slurm_jobs) ours.insert(job.job);
  std::map<std::string, std::string> queue;
  std::istringstream lines(output->text);
  std::string id, state;
  while (lines >> id >> state) {
    const auto underscore = id.find('_');
    if (underscore != std::string::npos && ours.count(id.substr(0, underscore))) queue[id] = state;
  }
  facts.queue = std::move(queue);
  return facts;
}

TaskCounts count_tasks(const std::vector<TaskView>& views) {
  TaskCounts counts;
  for (const auto& v : views) ++counts.of[v.state];
  return counts;
}

std::string task_summary(const std::vector<TaskView>& views) {
  const auto counts = count_tasks(views);
  std::string text;
  for (const auto state : kTaskStates) {
    if (counts[state] == 0 && state != TaskState::done) continue;
    text += (text.empty() ? "" : ", ") + integer_text(counts[state]) + " " + task_state_name(state);
  }
  return text;
}

std::string task_detail(const TaskView& v) {
  switch (v.state) {
    case TaskState::done: {
      const auto started = integer_of(v.record, "started"), finished = integer_of(v.record, "finished");
      return started && finished ? integer_text(*finished - *started) + " s" : "";
    }
    case TaskState::failed:
      if (!v.problem.empty()) return v.problem;
      return first_line(text_of(v.record, "error")) + " (log: " + v.log + ")";
    case TaskState::lost: return "ended without recording why (killed? out of memory? time limit?): see " + v.log;
    case TaskState::running: {
      if (v.record.is_null()) return v.slurm_id.empty() ? "" : "slurm " + v.slurm_id;
      const auto recorded = text_of(v.record, "host");
      const auto host = recorded.empty() ? std::string("?") : recorded;
      if (!v.slurm_id.empty()) return "slurm " + v.slurm_id + " on " + host;
      return "pid " + text_of(v.record, "pid") + " on " + host;
    }
    case TaskState::queued:
    case TaskState::requeued: return v.slurm_id.empty() ? "" : "slurm " + v.slurm_id;
    case TaskState::preempted: return "state saved; `lmkit batch` again resumes it";
    case TaskState::pending: return "";
  }
  return "";
}

void print_task_table(std::ostream& out, const BatchManifest& manifest, const std::vector<TaskView>& views,
                      bool with_queue) {
  out << manifest.name << " in " << manifest.out << ": " << views.size() << " tasks — " << task_summary(views) << "\n";
  if (!manifest.slurm_jobs.empty() && !with_queue) {
    out << "(squeue is not available here: running/queued come from the tasks' own records only)\n";
  }
  std::size_t width = 4;
  for (const auto& v : views) width = std::max(width, v.cell.size());
  out << fmt::format("{:>5}  {:<9}  {:>8}  {:<{}}  {}\n", "task", "state", "attempts", "cell", width, "detail");
  for (const auto& v : views) {
    out << fmt::format("{:>5}  {:<9}  {:>8}  {:<{}}  {}\n", v.task, task_state_name(v.state), v.attempts, v.cell, width,
                       task_detail(v));
  }
}

std::optional<std::string> run_recorded_task(const std::string& out, std::int64_t task, const std::string& cell,
                                             const std::string& recipe,
                                             const std::function<std::optional<std::string>()>& run) {
  if (out.empty()) throw UsageError("the recipe's output folder is empty: give one (--set out=DIR)");
  if (task < 1) throw UsageError("task " + integer_text(task) + " is no task: tasks count from 1");
  const BatchPaths paths(out);
  const auto folder = paths.tasks + "/" + integer_text(task);
  make_folder(folder);
  const FileLock lock(folder, "batch task " + integer_text(task) + " of recipe " + recipe);
  const auto file = paths.task_record(task);
  const auto previous = read_object(file, nullptr);
  nlohmann::json record = {{"task", task},
                           {"id", cell},
                           {"attempt", integer_of(previous, "attempt").value_or(0) + 1},
                           {"host", host_name()},
                           {"pid", current_pid()},
                           {"started", static_cast<std::int64_t>(std::time(nullptr))},
                           {"state", "running"}};
  // The Slurm id of this array task ("<array job>_<index>"), or of this job; none outside Slurm.
  const char* array = std::getenv("SLURM_ARRAY_JOB_ID");
  const char* index = std::getenv("SLURM_ARRAY_TASK_ID");
  const char* job = std::getenv("SLURM_JOB_ID");
  if (array && index) {
    record["slurm_job"] = std::string(array) + "_" + index;
  } else if (job) {
    record["slurm_job"] = job;
  }
  write_file_atomically(file, config::dump_json(record, 2));
  const auto error = run();
  record["finished"] = static_cast<std::int64_t>(std::time(nullptr));
  if (!error) {
    record["state"] = "done";
  } else if (was_preempted() || was_interrupted()) {
    record["state"] = "preempted";  // stopped, not failed: the next batch resumes it
  } else {
    record["state"] = "failed";
    record["error"] = *error;
  }
  write_file_atomically(file, config::dump_json(record, 2));
  return error;
}

}  // namespace lmkit::training
