// Where each task of a batch stands, from what the folder and the cluster say: a cell's
// result.json (the truth: done), the task's own record (batch/tasks/<i>.json, written by the task
// as it starts and ends), Slurm's queue, and whether a recorded process is still alive here.
#pragma once
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "runtime/batch/batch_manifest.h"

namespace lmkit::training {

// done · running · queued · requeued (preempted on Slurm, waiting to resume) · preempted (saved its
// state, not queued: the next `lmkit batch` resumes it) · failed · lost (its process ended without a
// word: killed, out of memory, time limit without a signal) · pending (never started).
enum class TaskState { done, running, queued, requeued, preempted, failed, lost, pending };
constexpr TaskState kTaskStates[] = {TaskState::done,      TaskState::running, TaskState::queued,
                                     TaskState::requeued,  TaskState::preempted, TaskState::failed,
                                     TaskState::lost,      TaskState::pending};
const char* task_state_name(TaskState state);
// Whether `lmkit batch` starts the task again: pending, failed, lost, preempted.
bool is_runnable(TaskState state);

struct TaskView {
  std::int64_t task = 0;
  std::string cell, log;
  TaskState state = TaskState::pending;
  std::int64_t attempts = 0;
  std::string slurm_id;       // "<job>_<task>" of the newest submission that ran it, or ""
  nlohmann::json record;      // the task's own record, null if none
  std::string problem;        // a damaged result.json, in words
};

// What is known beyond the folder: Slurm's queue ({"<job>_<i>": "RUNNING"|"PENDING"|...} for our
// array tasks; nullopt when it cannot be read), this host's name, and whether a pid lives here.
struct TaskFacts {
  std::optional<std::map<std::string, std::string>> queue;
  std::string host;
  std::function<bool(std::int64_t pid)> alive;
  // Whether a process holds task i's folder lock (batch/tasks/<i>/, which a running task holds until
  // it ends): on this host the truth about a "running" record, whose pid may have been reused by
  // another process since its task died. Unset: the pid alone decides.
  std::function<bool(std::int64_t task)> task_held;
};

std::vector<TaskView> task_views(const BatchManifest& manifest, const TaskFacts& facts);

// Slurm's queue for the manifest's submissions (squeue), nullopt when there are none or squeue is
// missing or failing; and the facts of this machine with it.
TaskFacts observe_tasks(const BatchManifest& manifest);

struct TaskCounts {
  std::map<TaskState, std::int64_t> of;
  std::int64_t operator[](TaskState s) const { return of.count(s) ? of.at(s) : 0; }
};
TaskCounts count_tasks(const std::vector<TaskView>& views);
// "3 done, 1 failed, 2 pending": the states that have tasks, done always.
std::string task_summary(const std::vector<TaskView>& views);
// One line on a task beyond its state: its run time, its error and log, its Slurm id or pid.
std::string task_detail(const TaskView& view);

// The per-task table with a summary line; `with_queue`: Slurm's queue was read.
void print_task_table(std::ostream& out, const BatchManifest& manifest, const std::vector<TaskView>& views,
                      bool with_queue);

// Runs task `task` (cell `cell` of the folder `out`) as the task records it for `lmkit status`:
// the task's folder (batch/tasks/<i>/) locked first, so that a hand rerun beside the batch's own
// task is refused naming the holder and leaves the task's state alone; then batch/tasks/<i>.json
// says running (the attempt number, host, pid, Slurm id, start), and when `run` ends, done, failed
// (with `run`'s error) or preempted (a preemption signal or Ctrl-C stopped it: the next batch
// resumes it). `run` returns its error, none for a success; so does this.
std::optional<std::string> run_recorded_task(const std::string& out, std::int64_t task, const std::string& cell,
                                             const std::string& recipe,
                                             const std::function<std::optional<std::string>()>& run);

}  // namespace lmkit::training
