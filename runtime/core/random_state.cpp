#include "runtime/core/random_state.h"

#include <mutex>

namespace lmkit {
namespace {

torch::Tensor state_of(at::Generator& generator) {
  std::lock_guard<std::mutex> lock(generator.mutex());
  return generator.get_state();
}

}  // namespace

PreservedRandomState::PreservedRandomState(const torch::Device& device) {
  auto cpu = at::detail::getDefaultCPUGenerator();
  kept_.emplace_back(cpu, state_of(cpu));
  if (device.is_cuda()) {
    auto generator = at::globalContext().defaultGenerator(device);
    kept_.emplace_back(generator, state_of(generator));
  }
}

PreservedRandomState::~PreservedRandomState() {
  for (auto& [generator, state] : kept_) {
    std::lock_guard<std::mutex> lock(generator.mutex());
    generator.set_state(state);
  }
}

}  // namespace lmkit
