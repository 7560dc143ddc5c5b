// The state of Torch's default random generators, kept across a piece of code that must not move
// them: a check that calls a model's function once more (a Lua head's forward beside its nll) would
// otherwise shift every random draw after it, and a resumed run would no longer replay the
// uninterrupted one, since the check runs once per process.
#pragma once
#include <vector>

#include "runtime/core/torch.h"

namespace lmkit {

class PreservedRandomState {
 public:
  // Keeps the CPU generator's state and, for a CUDA device, that device's.
  explicit PreservedRandomState(const torch::Device& device);
  ~PreservedRandomState();
  PreservedRandomState(const PreservedRandomState&) = delete;
  PreservedRandomState& operator=(const PreservedRandomState&) = delete;

 private:
  std::vector<std::pair<at::Generator, torch::Tensor>> kept_;
};

}  // namespace lmkit
