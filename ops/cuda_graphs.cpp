#include "ops/cuda_graphs.h"

#include <map>
#include <optional>
#include <utility>

#include "runtime/core/error.h"
#include "runtime/core/exception_text.h"

#ifdef LMKIT_OPS_CUDA
#include <ATen/cuda/CUDAEvent.h>
#include <ATen/cuda/CUDAGraph.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#endif

namespace lmkit::ops {

#ifdef LMKIT_OPS_CUDA

std::string cuda_graphs_unsupported(const torch::Device& device) {
  if (!device.is_cuda()) return "CUDA graphs need a CUDA device, and the model is on " + device.str();
  return "";
}

struct CudaGraphs::Graphs {
  std::map<std::string, std::unique_ptr<at::cuda::CUDAGraph>> by_key;
  // The memory pool every capture shares: the first capture's, given to the later ones.
  at::cuda::MempoolId_t pool{0, 0};
  bool has_pool = false;
  // One side stream for every capture: the caching allocator reuses a block only on the stream it
  // was made for, private pools included, so graphs captured on different streams would not share.
  std::optional<c10::cuda::CUDAStream> stream;
};

void CudaGraphs::capture(const std::string& key, const torch::Device& device, const std::function<void()>& work) {
  if (const auto why = cuda_graphs_unsupported(device); !why.empty()) throw UsageError(why);
  c10::cuda::CUDAGuard device_guard(device);
  auto graph = std::make_unique<at::cuda::CUDAGraph>();
  // Capture needs a stream other than the default one; it starts after the work queued so far.
  const auto origin = c10::cuda::getCurrentCUDAStream();
  if (!graphs_->stream || graphs_->stream->device_index() != origin.device_index()) {
    graphs_->stream = c10::cuda::getStreamFromPool(/*isHighPriority=*/false, device.index());
  }
  const auto side = *graphs_->stream;
  {
    c10::cuda::CUDAStreamGuard stream_guard(side);
    // The side stream begins after everything queued on the origin (an event, not a host wait).
    at::cuda::CUDAEvent ready;
    ready.record(origin);
    ready.block(side);
    bool began = false;
    try {
      if (graphs_->has_pool) {
        graph->capture_begin(graphs_->pool);
      } else {
        graph->capture_begin();
      }
      began = true;
      work();
      graph->capture_end();
    } catch (const std::exception&) {
      const auto why = describe_exception(std::current_exception());
      if (began) {
        // Ends the capture mode of the stream (the graph is invalid either way), then says why.
        try {
          graph->capture_end();
        } catch (const std::exception&) {
        }
      }
      throw EnvironmentError("CUDA graph capture of '" + key + "' failed: " + why);
    }
  }
  if (!graphs_->has_pool) {
    graphs_->pool = graph->pool();
    graphs_->has_pool = true;
  }
  graphs_->by_key[key] = std::move(graph);
}

void CudaGraphs::replay(const std::string& key) {
  const auto it = graphs_->by_key.find(key);
  if (it == graphs_->by_key.end()) throw std::logic_error("CudaGraphs::replay: no graph captured under '" + key + "'");
  it->second->replay();
}

#else

std::string cuda_graphs_unsupported(const torch::Device& device) {
  if (!device.is_cuda()) return "CUDA graphs need a CUDA device, and the model is on " + device.str();
  return "this lmkit was built without its CUDA support (a CUDA Torch and nvcc: ops/cuda/README.md), so it cannot "
         "capture CUDA graphs";
}

struct CudaGraphs::Graphs {
  std::map<std::string, bool> by_key;
};

void CudaGraphs::capture(const std::string&, const torch::Device& device, const std::function<void()>&) {
  throw UsageError(cuda_graphs_unsupported(device));
}

void CudaGraphs::replay(const std::string& key) {
  throw std::logic_error("CudaGraphs::replay: no graph captured under '" + key + "'");
}

#endif

CudaGraphs::CudaGraphs() : graphs_(std::make_unique<Graphs>()) {}
CudaGraphs::~CudaGraphs() = default;

void CudaGraphs::clear() { graphs_ = std::make_unique<Graphs>(); }

}  // namespace lmkit::ops
