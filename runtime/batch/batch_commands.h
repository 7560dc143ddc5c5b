// The batch commands (their output on stdout): `lmkit batch` (run or submit a recipe's grid), `lmkit status` (where its tasks
// stand) and `lmkit report` (the recipe's report over the finished cells) — the same for the
// command line and lmkit.batch. A user's mistake is a UsageError or EnvironmentError naming the
// file, key or tool and the way out.
#pragma once
#include <string>

#include "runtime/batch/batch_options.h"

namespace lmkit::training {

// Runs (local) or submits (slurm) the grid's tasks that are neither done nor running nor queued,
// holding the batch folder's lock meanwhile (a second `lmkit batch` on it is refused naming the
// holder). Exit status: 0 all well, 1 a task failed, 75 stopped by a signal (the tasks saved their
// state).
int run_batch(const BatchGrid& grid, const BatchOptions& options);

// The per-task table of the batch folder `dir`. Exit status: 0 every task done, 1 one failed or was
// lost, 3 some still pending, queued or running.
int batch_status(const std::string& dir);

// `lmkit run RECIPE --set <the batch's settings> --set out=DIR --set report_only=true` in a child
// lmkit (a fresh process whose settings are the batch's); its exit status.
int batch_report(const std::string& dir);

}  // namespace lmkit::training
