#include "runtime/core/determinism.h"

#include <cstdlib>

#include "runtime/core/torch.h"

namespace lmkit {

void set_deterministic(bool on) {
  // The value PyTorch documents for reproducible cuBLAS results; a user's own value is kept.
  if (on) setenv("CUBLAS_WORKSPACE_CONFIG", ":4096:8", /*overwrite=*/0);
  auto& context = at::globalContext();
  context.setDeterministicAlgorithms(on, /*warn_only=*/false);
  context.setDeterministicCuDNN(on);
  if (on) context.setBenchmarkCuDNN(false);
}

bool deterministic() { return at::globalContext().deterministicAlgorithms(); }

}  // namespace lmkit
