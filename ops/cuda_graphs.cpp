#include "ops/cuda_graphs.h"

#include <map>
#include <mutex>
#include <optional>
#include <utility>

#include "ops/graph_stream.h"

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

namespace {

// One side stream per device for the whole process: the caching allocator reuses a block only on
// the stream it was made for, private pools included, so graphs captured on different streams would
// not share; and each new stream cuBLAS runs on gets a workspace of its own, never given back.
c10::cuda::CUDAStream side_stream(c10::DeviceIndex index) {
  static std::mutex mutex;
  static auto* streams = new std::map<c10::DeviceIndex, c10::cuda::CUDAStream>;  // never destroyed, as the streams
  std::lock_guard<std::mutex> lock(mutex);
  auto it = streams->find(index);
  if (it == streams->end()) it = streams->emplace(index, c10::cuda::getStreamFromPool(/*isHighPriority=*/false, index)).first;
  return it->second;
}

}  // namespace

struct GraphStreamScope::State {
  c10::cuda::CUDAStream origin, side;
  c10::cuda::CUDAStreamGuard guard;
  State(c10::cuda::CUDAStream origin_stream, c10::cuda::CUDAStream side_stream)
      : origin(origin_stream), side(side_stream), guard(side_stream) {}
};

GraphStreamScope::GraphStreamScope(const torch::Device& device) {
  if (!device.is_cuda()) return;
  c10::cuda::CUDAGuard device_guard(device);
  const auto origin = c10::cuda::getCurrentCUDAStream();
  const auto side = side_stream(origin.device_index());
  if (origin == side) return;  // nested: already there
  at::cuda::CUDAEvent ready;
  ready.record(origin);
  ready.block(side);
  state_ = std::make_unique<State>(origin, side);
}

GraphStreamScope::~GraphStreamScope() {
  if (!state_) return;
  at::cuda::CUDAEvent done;
  done.record(state_->side);
  done.block(state_->origin);
  state_.reset();  // the guard puts the origin stream back
}

struct CudaGraphs::Graphs {
  std::map<std::string, std::unique_ptr<at::cuda::CUDAGraph>> by_key;
  // The memory pool every capture shares: the first capture's, given to the later ones.
  at::cuda::MempoolId_t pool{0, 0};
  bool has_pool = false;
};

void CudaGraphs::capture(const std::string& key, const torch::Device& device, const std::function<void()>& work) {
  if (const auto why = cuda_graphs_unsupported(device); !why.empty()) throw UsageError(why);
  c10::cuda::CUDAGuard device_guard(device);
  auto graph = std::make_unique<at::cuda::CUDAGraph>();
  // Capture needs a stream other than the default one: the process's side stream (where a run
  // with graphs launches all its steps, GraphStreamScope), after the work queued so far.
  {
    GraphStreamScope on_side_stream(device);
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

struct GraphStreamScope::State {};
GraphStreamScope::GraphStreamScope(const torch::Device&) {}
GraphStreamScope::~GraphStreamScope() = default;

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
