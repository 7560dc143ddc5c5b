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

#include "runtime/core/error.h"
#include "runtime/core/torch.h"

namespace lmkit::ops {

// Empty when graphs of device `device` can be captured in this build and process; else why not,
// in words.
std::string cuda_graphs_unsupported(const torch::Device& device);

// A capture that failed — an operation that cannot be captured (a read of values to the host, a
// synchronisation, a host-to-device copy from pageable memory) or CUDA's refusal at its end. None
// of the work ran, and CudaGraphs::capture has put back what the capture had changed: the stream
// is out of capture mode, new memory comes from the usual pools again, and the default generator
// continues where it stood, so the same work may be launched eagerly next.
class CaptureRefused : public EnvironmentError {
 public:
  using EnvironmentError::EnvironmentError;
};

class CudaGraphs {
 public:
  CudaGraphs();
  ~CudaGraphs();
  CudaGraphs(const CudaGraphs&) = delete;
  CudaGraphs& operator=(const CudaGraphs&) = delete;

  // Captures `work` under `key` on a side stream of `device` (nothing runs: call replay). `work`
  // may only launch device work — no read to the host (read_to_host refuses one while it runs), no
  // synchronisation, no host-to-device copy from pageable memory. When the capture fails, nothing
  // is kept and CaptureRefused says why. Torch leaves behind a failed capture what differs between
  // its versions (the allocators' routing into the graphs' pool and a reference to it, the
  // generator's capture state); lmkit puts back the stream's mode, the device and (where Torch has
  // it) pinned host routing, the references and the generator, releases every earlier graph (they
  // drew from the generator's state before it was put back), and keeps the failed CUDAGraph object
  // alive for good (a Torch may still point at it). Where Torch had already ended the device
  // routing, the reference is left rather than risked being given back twice, and the process tries
  // no other capture (cuda_graphs_unsupported says why). Where the stream stays capturing or the
  // generator cannot be put back, EnvironmentError says so: no CUDA work may go on in the process.
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
