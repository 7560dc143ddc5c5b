// CUDA graphs: a piece of device work captured once and replayed with one launch (issue 37). A
// training step at the paper's batch sizes is latency-bound — hundreds of small kernels, each
// launched by the host — and a replay launches them all at once. Captures share one memory pool:
// the work's own temporaries live there, so whatever must outlive one replay (inputs, the carried
// state, results) has to be a tensor made outside the capture that the work writes in place.
//
// Built with lmkit's CUDA support (LMKIT_OPS_CUDA: a CUDA Torch and nvcc); elsewhere supported()
// is false and capturing is refused with the reason.
#pragma once
#include <functional>
#include <memory>
#include <string>

#include "runtime/core/torch.h"

namespace lmkit::ops {

// Empty when graphs of device `device` can be captured in this build; else why not, in words.
std::string cuda_graphs_unsupported(const torch::Device& device);

class CudaGraphs {
 public:
  CudaGraphs();
  ~CudaGraphs();
  CudaGraphs(const CudaGraphs&) = delete;
  CudaGraphs& operator=(const CudaGraphs&) = delete;

  // Captures `work` under `key` on a side stream of `device` (nothing runs: call replay). `work`
  // may only launch device work — no read to the host, no synchronisation, no host-to-device copy
  // from pageable memory. When the capture fails, nothing is kept and EnvironmentError says why;
  // Torch leaves its CUDA generator and caching allocator in an undefined state then, so the
  // process must not go on with CUDA work (the trainer stops the run).
  void capture(const std::string& key, const torch::Device& device, const std::function<void()>& work);
  // Launches the captured work on the current stream (the random draws continue the default
  // generator's sequence, as the same work launched eagerly would).
  void replay(const std::string& key);
  // Releases every graph and the shared pool.
  void clear();

 private:
  struct Graphs;
  std::unique_ptr<Graphs> graphs_;
};

}  // namespace lmkit::ops
