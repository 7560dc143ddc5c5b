// Bit-identical reruns on a GPU. On the CPU, lmkit's kernels already give the same bits from the
// same seed and thread count. On CUDA some do not: the embedding's and index ops' backward passes
// add with atomics in whatever order the threads arrive, cuDNN may pick another algorithm from one
// run to the next, and cuBLAS splits some products over a workspace shared by streams. Two runs
// from one seed then drift apart by rounding, then by more. set_deterministic(true) asks Torch for
// the deterministic kernels instead (slower where they differ):
//   - Torch's deterministic algorithms (an op that has none raises an error naming it);
//   - cuDNN's deterministic algorithms, without its benchmark-driven choice.
// cuBLAS takes its part from the environment variable CUBLAS_WORKSPACE_CONFIG (":4096:8"), which it
// reads when CUDA starts. Changing the environment of a running process is unsafe (glibc's
// setenv races with any thread's getenv: CUDA's, Torch's, cuBLAS's), so lmkit never does it late:
// LMKIT_DETERMINISTIC=1 makes the process's entry (the lmkit executable's main, or the Lua
// module's opener under another Lua) set the variable when it is unset, before anything else
// runs, and call set_deterministic(true). set_deterministic itself only warns, once, when CUDA is
// present and the variable is unset.
#pragma once

namespace lmkit {

void set_deterministic(bool on);

// Whether Torch's deterministic algorithms are on (set here or by the embedding program).
bool deterministic();

// For a process's entry point, before any other work (single-threaded): reads LMKIT_DETERMINISTIC
// ("1", "on", "true", "yes" turn it on; "", "0", "off", "false", "no" leave it off; anything else
// is a UsageError naming the value); when on, sets CUBLAS_WORKSPACE_CONFIG=:4096:8 unless the user
// set it, and calls set_deterministic(true). Returns whether it turned determinism on.
bool deterministic_from_environment();

// The CUBLAS_WORKSPACE_CONFIG value lmkit sets for deterministic cuBLAS products.
inline constexpr const char* kDeterministicCublasWorkspace = ":4096:8";

}  // namespace lmkit
