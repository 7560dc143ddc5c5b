// The one stream a run with CUDA graphs launches on. PyTorch requires a graph's warm-up (the eager
// steps before its capture) on the stream it is captured on, and cuBLAS keeps a 32 MiB workspace
// per stream it has run on: so every step of such a run — eager, captured, replayed, and the
// deferred read of its numbers — goes to one side stream per device, taken once per process (not
// once per release of the graphs), on which the captures happen too (ops/cuda_graphs.cpp).
#pragma once
#include <memory>

#include "runtime/core/torch.h"

namespace lmkit::ops {

// While alive, the side stream of `device` is its current stream; it begins after the work queued
// on the stream that was current, and that stream, once back, waits for the side stream's work
// (events: the host never waits). Nothing happens for a device that is not CUDA, or in a build
// without lmkit's CUDA support. Scopes nest.
class GraphStreamScope {
 public:
  explicit GraphStreamScope(const torch::Device& device);
  ~GraphStreamScope();
  GraphStreamScope(const GraphStreamScope&) = delete;
  GraphStreamScope& operator=(const GraphStreamScope&) = delete;

 private:
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace lmkit::ops
