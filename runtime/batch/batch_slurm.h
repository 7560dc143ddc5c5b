// A batch on a Slurm cluster: one job array whose task i is the batch's task i, submitted by
// sbatch from a job script written into the batch folder; and waiting for it through squeue.
#pragma once
#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include "runtime/batch/batch_manifest.h"
#include "runtime/batch/batch_options.h"
#include "runtime/batch/batch_task_state.h"

namespace lmkit::training {

// "1-3,5,7-9" for {1, 2, 3, 5, 7, 8, 9} in any order: Slurm's --array syntax.
std::string index_ranges(std::vector<std::int64_t> indices);

// The job script: #SBATCH lines from the options, then the task's command, which forwards SIGTERM and
// SIGUSR1 to lmkit (it saves its state and exits with 75) and, with requeue, requeues its array task.
std::string sbatch_script(const BatchManifest& manifest, const BatchOptions& options);

// Writes the script and submits `tasks` (with dry_run: prints the sbatch command instead); records
// the submission in the manifest. EnvironmentError when sbatch is missing or fails. Returns 0.
int submit_slurm_array(BatchManifest& manifest, const std::vector<std::int64_t>& tasks, const BatchOptions& options,
                       std::ostream& out);

// Polls until no task of ours is queued or running (or wait_timeout passes), printing a line whenever
// the counts change; the tasks' final views. EnvironmentError when Slurm's queue cannot be read.
std::vector<TaskView> wait_for_slurm(const BatchManifest& manifest, const BatchOptions& options, std::ostream& out);

}  // namespace lmkit::training
