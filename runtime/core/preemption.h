// Preemption: a cluster announces the end of a job with SIGTERM (Slurm, Kubernetes) or a signal
// chosen in the job script (SIGUSR1 with `#SBATCH --signal=USR1@120`). While a training run is
// active, either signal only sets a flag; the trainer sees it at the next step boundary, writes
// its resume state and stops with Preempted. `lmkit run` then exits with kPreemptedExitStatus so
// that a job script can requeue (scripts/ and docs/training.md show how). Outside a run the
// signals keep their previous handlers.
#pragma once
#include <stdexcept>
#include <string>

namespace lmkit {

// EX_TEMPFAIL from sysexits.h: "try again later" — the run is resumable, not failed.
constexpr int kPreemptedExitStatus = 75;

class Preempted : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Installs the flag-setting handlers for SIGTERM and SIGUSR1 for its lifetime (nests).
class PreemptionGuard {
 public:
  PreemptionGuard();
  ~PreemptionGuard();
  PreemptionGuard(const PreemptionGuard&) = delete;
  PreemptionGuard& operator=(const PreemptionGuard&) = delete;
};

// The signal number received since the last clear (0: none).
int preemption_signal();
void clear_preemption();
// Whether a run in this process ended because of a preemption (for the exit status).
bool was_preempted();
void set_preempted(bool value);

}  // namespace lmkit
