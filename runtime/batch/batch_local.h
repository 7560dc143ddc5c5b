// A batch's tasks run on this machine: a pool of child processes (`lmkit run RECIPE --set task=i`),
// one per GPU slot when GPUs are shared, with a line per start and end, and an ETA.
#pragma once
#include <cstdint>
#include <map>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "runtime/batch/batch_manifest.h"
#include "runtime/batch/batch_options.h"

namespace lmkit::training {

// The pool's slots: one environment per task that may run at once. With several GPUs, one task per
// GPU; with tasks_per_gpu = k, k per GPU (a small model leaves most of a GPU idle), the slots going
// round the GPUs so that the first tasks spread over all of them. `visible` is this process's
// CUDA_VISIBLE_DEVICES: a task gets its g-th entry (a scheduler's GPU number, a UUID, a MIG
// instance), so that it runs on a GPU given to this process; unset, GPU g is "g". Empty when
// there is nothing to choose (one GPU and one task at a time, or --jobs: the tasks see what this
// process sees).
std::vector<std::map<std::string, std::string>> gpu_slots(const BatchOptions& options,
                                                          const std::optional<std::string>& visible);

// Runs `tasks` (1-based) and waits for them; 0 when all ended well, 1 when one failed, 75 when a
// signal (SIGTERM/SIGUSR1) stopped the batch: the running tasks saved their state.
int run_tasks_here(const BatchManifest& manifest, const std::vector<std::int64_t>& tasks, const BatchOptions& options,
                   std::ostream& out);

}  // namespace lmkit::training
