#include "ops/cuda_graphs.h"

#include <map>
#include <mutex>
#include <optional>
#include <utility>
#include <vector>

#include "ops/graph_stream.h"

#include "runtime/core/error.h"
#include "runtime/core/exception_text.h"
#include "runtime/core/host_read.h"

#ifdef LMKIT_OPS_CUDA
#include <ATen/cuda/CUDAEvent.h>
#include <ATen/cuda/CUDAGeneratorImpl.h>
#include <ATen/cuda/CUDAGraph.h>
#include <c10/cuda/CUDACachingAllocator.h>
#if __has_include(<ATen/core/CachingHostAllocator.h>)
#include <ATen/core/CachingHostAllocator.h>
#endif
#include <c10/cuda/CUDAFunctions.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#include <cuda_runtime_api.h>
#endif

#ifdef LMKIT_OPS_CUDA
// Torch's pinned host memory allocator, where this Torch has one that routes a capture's pinned
// allocations into the graph's pool too (recent versions: CUDAGraph::capture_begin calls its
// begin_allocate_to_pool with a filter that points at the CUDAGraph). Older versions have no
// at::getHostAllocator, or one without pools: the fallbacks are chosen then, by overload resolution
// (a non-template at::getHostAllocator wins over the template) and SFINAE (end_host_routing). Both
// namespaces are at file scope: a using-directive makes names visible as if declared in the nearest
// namespace enclosing both it and the one it names, so only here do at's and the probe's meet.
namespace lmkit_host_allocator_probe {
struct NoHostAllocator {};
template <typename... Args>
NoHostAllocator* getHostAllocator(Args&&...) {
  return nullptr;
}
}  // namespace lmkit_host_allocator_probe

namespace lmkit_host_allocator_lookup {
using namespace ::lmkit_host_allocator_probe;
using namespace ::at;
inline auto cuda_host_allocator() { return getHostAllocator(c10::DeviceType::CUDA); }
}  // namespace lmkit_host_allocator_lookup
#endif

namespace lmkit::ops {

#ifdef LMKIT_OPS_CUDA

namespace {

// Why the first failed capture of this process failed (empty: none has). Never destroyed: a step
// may ask during the process's exit.
std::mutex refusal_mutex;
std::string& refusal_in_process() {
  static auto* why = new std::string;
  return *why;
}

}  // namespace

std::string cuda_graphs_unsupported(const torch::Device& device) {
  if (!device.is_cuda()) return "CUDA graphs need a CUDA device, and the model is on " + device.str();
  std::lock_guard<std::mutex> lock(refusal_mutex);
  if (!refusal_in_process().empty()) {
    return "a CUDA graph capture failed earlier in this process (" + refusal_in_process() +
           "), and after one lmkit captures no other in the same process";
  }
  return "";
}

namespace {

template <typename Allocator>
auto end_host_routing(Allocator* allocator, const at::cuda::MempoolId_t& pool, int)
    -> decltype(allocator->end_allocate_to_pool(pool), allocator->release_pool(pool), bool()) {
  if (allocator == nullptr) return false;
  try {
    allocator->end_allocate_to_pool(pool);
  } catch (const std::exception&) {
    return false;  // Torch had ended it (its capture_end got that far)
  }
  try {
    allocator->release_pool(pool);
  } catch (const std::exception&) {
  }
  return true;
}
template <typename Allocator>
bool end_host_routing(Allocator*, const at::cuda::MempoolId_t&, long) {
  return false;  // this Torch routes no pinned memory into a graph's pool
}
// Whether this Torch's pinned host allocator takes part in captures (for the record of an unwind).
template <typename Allocator>
constexpr auto host_allocator_has_pools(Allocator* allocator, int)
    -> decltype(allocator->end_allocate_to_pool(std::declval<const at::cuda::MempoolId_t&>()), bool()) {
  return true;
}
template <typename Allocator>
constexpr bool host_allocator_has_pools(Allocator*, long) {
  return false;
}

// Failed captures' CUDAGraph objects, never destroyed: a Torch that had not ended an allocator's
// routing keeps a filter pointing at its graph, and destroying one half-captured runs reset() on
// states this file cannot see. A few hundred bytes per failure, at most one per run.
void keep_failed_graph(std::unique_ptr<at::cuda::CUDAGraph> graph) {
  static std::mutex mutex;
  static auto* kept = new std::vector<std::unique_ptr<at::cuda::CUDAGraph>>;
  std::lock_guard<std::mutex> lock(mutex);
  kept->push_back(std::move(graph));
}

// What a failed capture left that could not be put back (empty: nothing).
struct Unwound {
  std::string left;       // in words: a state in which no CUDA work may go on (the stream capturing, the generator)
  bool pool_kept = false;  // Torch had ended the routing itself: the capture's reference to the pool is left
  std::string host;       // the pinned host pool: "released", "left" (Torch had ended its routing) or "none"
};

// Puts back what a failed capture changed, as far as Torch lets it be known: the stream out of
// capture mode (work that threw leaves it capturing, or invalidated), the caching allocators'
// routing of new memory into the graphs' pool ended and the reference the capture took to that pool
// given back — each only when Torch had not ended the routing itself (how far its capture_end got
// differs between its versions; the reference is then left rather than risked being given back
// twice) —, and the default generator's state as it stood before the capture (Torch 2.6 leaves it
// in capture mode, where every eager draw fails an assertion).
Unwound unwind_failed_capture(cudaStream_t stream, c10::DeviceIndex device, const at::cuda::MempoolId_t& pool,
                              at::Generator& generator, const at::Generator& before) {
  Unwound out;
  cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
  if (cudaStreamIsCapturing(stream, &status) == cudaSuccess && status != cudaStreamCaptureStatusNone) {
    cudaGraph_t partial = nullptr;
    if (cudaStreamEndCapture(stream, &partial) == cudaSuccess && partial != nullptr) (void)cudaGraphDestroy(partial);
  }
  // A capture's errors are not sticky; the last one must not be taken for the next kernel's.
  (void)cudaGetLastError();
  status = cudaStreamCaptureStatusNone;
  if (cudaStreamIsCapturing(stream, &status) != cudaSuccess || status != cudaStreamCaptureStatusNone) {
    out.left = "the stream is still capturing";
  }
  (void)cudaGetLastError();
  bool routed = false;
  try {
    c10::cuda::CUDACachingAllocator::endAllocateToPool(device, pool);
    routed = true;
  } catch (const std::exception&) {
    // Torch had ended the routing (its capture_end got that far).
  }
  if (routed) {
    try {
      c10::cuda::CUDACachingAllocator::releasePool(device, pool);
    } catch (const std::exception&) {
    }
  }
  out.pool_kept = !routed;
  out.host = "none";
  try {
    auto* host_allocator = ::lmkit_host_allocator_lookup::cuda_host_allocator();
    if (host_allocator_has_pools(host_allocator, 0)) {
      out.host = end_host_routing(host_allocator, pool, 0) ? "released" : "left";
    }
  } catch (const std::exception&) {
    out.host = "left";  // no allocator to ask (Torch's lookup refused)
  }
  try {
    std::lock_guard<std::mutex> lock(generator.mutex());
    generator.graphsafe_set_state(before);
  } catch (const std::exception& e) {
    out.left += std::string(out.left.empty() ? "" : "; ") + "the random generator could not be put back (" + e.what() + ")";
  }
  return out;
}

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
  // The memory pool every capture shares, named before the first capture (so that a failed one
  // can be unwound knowing it) and given to each.
  at::cuda::MempoolId_t pool{0, 0};
  bool has_pool = false;
};

void CudaGraphs::capture(const std::string& key, const torch::Device& device, const std::function<void()>& work) {
  if (const auto why = cuda_graphs_unsupported(device); !why.empty()) throw UsageError(why);
  c10::cuda::CUDAGuard device_guard(device);
  const auto index = c10::cuda::current_device();
  if (!graphs_->has_pool) {
    graphs_->pool = at::cuda::graph_pool_handle();
    graphs_->has_pool = true;
  }
  auto generator = at::cuda::detail::getDefaultCUDAGenerator(index);
  at::Generator before;
  {
    std::lock_guard<std::mutex> lock(generator.mutex());
    before = generator.clone();
  }
  auto graph = std::make_unique<at::cuda::CUDAGraph>();
  // Capture needs a stream other than the default one: the process's side stream (where a run
  // with graphs launches all its steps, GraphStreamScope), after the work queued so far.
  {
    GraphStreamScope on_side_stream(device);
    const cudaStream_t stream = c10::cuda::getCurrentCUDAStream().stream();
    try {
      graph->capture_begin(graphs_->pool);
      {
        HostReadsRefused no_reads("a CUDA graph's capture");
        work();
      }
      graph->capture_end();
    } catch (const std::exception&) {
      // The first line: CUDA's error texts go on with advice on debugging kernels.
      auto why = describe_exception(std::current_exception());
      why = why.substr(0, why.find('\n'));
      const auto unwound = unwind_failed_capture(stream, index, graphs_->pool, generator, before);
      keep_failed_graph(std::move(graph));
      // The earlier graphs draw from the generator's state before it was put back: none of them
      // may be replayed now that eager steps draw again. Their pool goes back with them.
      graphs_ = std::make_unique<Graphs>();
      if (!unwound.left.empty() || unwound.pool_kept) {
        // What this Torch left behind is not known to be undone: no other capture in this process.
        std::lock_guard<std::mutex> lock(refusal_mutex);
        if (refusal_in_process().empty()) refusal_in_process() = why;
      }
      if (!unwound.left.empty()) {
        throw EnvironmentError("CUDA graph capture failed: " + why + "; and after it " + unwound.left +
                               ", so no CUDA work can go on in this process");
      }
      // What was put back, for a bug report (a line of the run's log).
      throw CaptureRefused("CUDA graph capture failed: " + why + " (unwound: the stream, the generator, the device pool " +
                           (unwound.pool_kept ? "left" : "released") + ", the pinned host pool " + unwound.host + ")");
    }
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
