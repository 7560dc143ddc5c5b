// Bit-identical reruns on a GPU. On the CPU, lmkit's kernels already give the same bits from the
// same seed and thread count. On CUDA some do not: the embedding's and index ops' backward passes
// add with atomics in whatever order the threads arrive, cuDNN may pick another algorithm from one
// run to the next, and cuBLAS splits some products over a workspace shared by streams. Two runs
// from one seed then drift apart by rounding, then by more. set_deterministic(true) asks Torch for
// the deterministic kernels instead (slower where they differ):
//   - Torch's deterministic algorithms (an op that has none raises an error naming it);
//   - cuDNN's deterministic algorithms, without its benchmark-driven choice;
//   - CUBLAS_WORKSPACE_CONFIG=:4096:8 when the environment does not set it (cuBLAS reads it when
//     its first handle is made: call set_deterministic before the first CUDA work, e.g. on the
//     first line of a script).
#pragma once

namespace lmkit {

void set_deterministic(bool on);

// Whether Torch's deterministic algorithms are on (set here or by the embedding program).
bool deterministic();

}  // namespace lmkit
