#include "runtime/core/determinism.h"

#include <atomic>
#include <cstdlib>
#include <string>

#include "runtime/core/error.h"
#include "runtime/core/torch.h"
#include "runtime/core/warning.h"

namespace lmkit {

void set_deterministic(bool on) {
  auto& context = at::globalContext();
  context.setDeterministicAlgorithms(on, /*warn_only=*/false);
  context.setDeterministicCuDNN(on);
  if (on) context.setBenchmarkCuDNN(false);
  // getenv only reads; the variable is set (if at all) at the process's start.
  static std::atomic<bool> warned{false};
  if (on && std::getenv("CUBLAS_WORKSPACE_CONFIG") == nullptr && context.hasCUDA() && !warned.exchange(true)) {
    warn(std::string("deterministic kernels are on, but CUBLAS_WORKSPACE_CONFIG is unset, so cuBLAS products on the GPU "
                     "may still differ from run to run. cuBLAS reads it when CUDA starts, and a running process cannot "
                     "set it safely: start lmkit with LMKIT_DETERMINISTIC=1 (which sets it and turns this on), or with "
                     "CUBLAS_WORKSPACE_CONFIG=") +
         kDeterministicCublasWorkspace + " in its environment.");
  }
}

bool deterministic() { return at::globalContext().deterministicAlgorithms(); }

bool deterministic_from_environment() {
  const char* value = std::getenv("LMKIT_DETERMINISTIC");
  if (value == nullptr) return false;
  const std::string text = value;
  if (text.empty() || text == "0" || text == "off" || text == "false" || text == "no") return false;
  if (text != "1" && text != "on" && text != "true" && text != "yes") {
    throw UsageError("environment variable LMKIT_DETERMINISTIC must be 1 or 0 (on/off, true/false, yes/no), got '" +
                     text + "'; unset it or set LMKIT_DETERMINISTIC=1 for bit-identical GPU reruns");
  }
  // The process's start: no other thread reads the environment yet.
  if (std::getenv("CUBLAS_WORKSPACE_CONFIG") == nullptr) setenv("CUBLAS_WORKSPACE_CONFIG", kDeterministicCublasWorkspace, 0);
  set_deterministic(true);
  return true;
}

}  // namespace lmkit
