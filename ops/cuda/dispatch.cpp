#include "ops/cuda/dispatch.h"

#include <ATen/cuda/CUDAContext.h>
#include <ATen/detail/CUDAHooksInterface.h>
#include <c10/cuda/CUDACachingAllocator.h>
#include <c10/cuda/CUDAFunctions.h>
#include <c10/cuda/CUDAGuard.h>
#include <cuda_runtime_api.h>

#include <limits>
#include <string>

#include <fmt/format.h>

#include "ops/check.h"
#include "ops/cuda/kernels.h"
#include "runtime/core/error.h"
#include "runtime/core/number_text.h"
#include "runtime/core/tensor_memory.h"

namespace lmkit::ops::cuda {
namespace {

// Torch's CUDA allocator calls the registered free-memory callbacks whenever its cache has no block
// for an allocation, before it asks the driver for more, and looks again if one says it freed
// something. lmkit's collects the garbage of the Lua state the allocating thread runs
// (runtime/core/tensor_memory.h; nothing on threads that run no Lua, e.g. autograd's device
// threads), but only where the device is nearly full — a collection at every miss of the cache
// would be a full collection per new block size — and never while a CUDA graph is captured (a
// script's finalizers would run into the graph). Torch holds its allocator's recursive mutex
// meanwhile, so the tensors the collection frees return their blocks on this same thread.
class ReclaimTensorMemory final : public c10::FreeMemoryCallback {
 public:
  bool Execute() override {
    if (c10::cuda::currentStreamCaptureStatusMayInitCtx() != c10::cuda::CaptureStatus::None) return false;
    std::size_t free = 0, total = 0;
    if (cudaMemGetInfo(&free, &total) != cudaSuccess) {
      (void)cudaGetLastError();  // a failed query is no reason to collect, and must not linger
      return false;
    }
    if (free > total / 16) return false;  // the driver has room: the allocator gets its block there
    return reclaim_tensor_memory();
  }
};

// The stream Torch is using on the current device: the kernels queue behind the ATen work
// around them, and under a caller's torch::cuda::CUDAStreamGuard they follow it.
Stream current_stream() { return at::cuda::getCurrentCUDAStream().stream(); }

void check_launch(const char* error, const char* op) {
  if (error != nullptr)
    throw EnvironmentError(std::string(op) + ": CUDA kernel launch failed: " + error);
}

void check_on_cuda(const torch::Tensor& t, const char* op, const char* name) {
  LMKIT_OP_CHECK(t.defined() && t.is_cuda(),
                 std::string(op) + ": " + name + " must be a CUDA tensor (CUDA kernel path)");
}

void check_same_device(const torch::Tensor& a, const torch::Tensor& b, const char* op, const char* name) {
  LMKIT_OP_CHECK(a.device() == b.device(), std::string(op) + ": " + name + " is on " +
                                               b.device().str() + ", expected " + a.device().str());
}

torch::Tensor contiguous_as(const torch::Tensor& t, torch::ScalarType type) {
  return t.to(type).contiguous();
}

}  // namespace

torch::Tensor gss_log_softmax_forward(const torch::Tensor& logits, double c, double k) {
  check_on_cuda(logits, "gss_log_softmax", "logits");
  const c10::cuda::CUDAGuard device(logits.device());
  const auto l = logits.contiguous();
  auto out = torch::empty(l.sizes(), l.options());
  const int64_t n = l.size(-1);
  const int64_t rows = n == 0 ? 0 : l.numel() / n;
  AT_DISPATCH_FLOATING_TYPES(l.scalar_type(), "gss_log_softmax_cuda", [&] {
    check_launch(launch_gss_log_softmax_forward<scalar_t>(l.data_ptr<scalar_t>(), out.data_ptr<scalar_t>(),
                                                          rows, n, c, k, current_stream()),
                 "gss_log_softmax");
  });
  return out;
}

torch::Tensor gss_log_softmax_backward(const torch::Tensor& logits, const torch::Tensor& out,
                                       const torch::Tensor& grad_out, double c, double k) {
  check_on_cuda(logits, "gss_log_softmax", "logits");
  check_same_device(logits, out, "gss_log_softmax", "the saved output");
  check_same_device(logits, grad_out, "gss_log_softmax", "the incoming gradient");
  const c10::cuda::CUDAGuard device(logits.device());
  const auto l = logits.contiguous();
  const auto y = contiguous_as(out, l.scalar_type());
  const auto g = contiguous_as(grad_out, l.scalar_type());
  auto grad = torch::empty(l.sizes(), l.options());
  const int64_t n = l.size(-1);
  const int64_t rows = n == 0 ? 0 : l.numel() / n;
  AT_DISPATCH_FLOATING_TYPES(l.scalar_type(), "gss_log_softmax_backward_cuda", [&] {
    check_launch(launch_gss_log_softmax_backward<scalar_t>(
                     l.data_ptr<scalar_t>(), y.data_ptr<scalar_t>(), g.data_ptr<scalar_t>(),
                     grad.data_ptr<scalar_t>(), rows, n, c, k, current_stream()),
                 "gss_log_softmax backward");
  });
  return grad;
}

torch::Tensor plif_forward(const torch::Tensor& logits, const torch::Tensor& knots,
                           const torch::Tensor& slopes, double T) {
  check_on_cuda(logits, "plif", "logits");
  check_same_device(logits, slopes, "plif", "slopes");
  check_same_device(logits, knots, "plif", "the knot values");
  const c10::cuda::CUDAGuard device(logits.device());
  const auto l = logits.contiguous();
  const auto s = contiguous_as(slopes, torch::kFloat64);
  const auto y = contiguous_as(knots, torch::kFloat64);
  const int64_t K = s.numel();
  LMKIT_OP_CHECK(y.numel() == K, "plif: " + integer_text(y.numel()) + " knot values for " +
                                     integer_text(K) + " slopes");
  auto out = torch::empty(l.sizes(), l.options());
  AT_DISPATCH_FLOATING_TYPES(l.scalar_type(), "plif_cuda", [&] {
    check_launch(launch_plif_forward<scalar_t>(l.data_ptr<scalar_t>(), y.data_ptr<double>(),
                                               s.data_ptr<double>(), out.data_ptr<scalar_t>(),
                                               l.numel(), K, T, current_stream()),
                 "plif");
  });
  return out;
}

std::pair<torch::Tensor, torch::Tensor> plif_backward(const torch::Tensor& logits,
                                                      const torch::Tensor& slopes,
                                                      const torch::Tensor& grad_out, double T,
                                                      torch::Tensor grad_logits) {
  check_on_cuda(logits, "plif", "logits");
  check_same_device(logits, slopes, "plif", "slopes");
  check_same_device(logits, grad_out, "plif", "the incoming gradient");
  const c10::cuda::CUDAGuard device(logits.device());
  const auto l = logits.contiguous();
  const auto g = contiguous_as(grad_out, l.scalar_type());
  const auto s = contiguous_as(slopes, torch::kFloat64);
  const int64_t n = l.numel(), K = s.numel();
  // Intervals are sorted as 32-bit keys, and tile-local indices are 32-bit (ops/cuda/plif_kernels.cu).
  LMKIT_OP_CHECK(K <= std::numeric_limits<int32_t>::max(),
                 "plif: at most 2^31 − 1 slopes on CUDA, got " + integer_text(K));
  if (grad_logits.defined()) {
    // The callers in ops/plif.cpp make it; a mismatch is a bug there, not a user error.
    TORCH_INTERNAL_ASSERT(grad_logits.is_contiguous() && grad_logits.sizes() == l.sizes() &&
                          grad_logits.scalar_type() == l.scalar_type() && grad_logits.device() == l.device());
  } else {
    grad_logits = torch::empty(l.sizes(), l.options());
  }
  auto doubles = l.options().dtype(torch::kFloat64);
  auto grad_slopes = torch::empty({K}, doubles);
  std::size_t scratch_bytes = 0;
  check_launch(plif_slope_grad_scratch_bytes(n, K, &scratch_bytes), "plif backward (slope gradients)");
  // Bytes from Torch's caching allocator (no cudaMalloc per step, and capturable in a CUDA graph).
  auto scratch = torch::empty({static_cast<int64_t>(scratch_bytes)}, l.options().dtype(torch::kUInt8));
  AT_DISPATCH_FLOATING_TYPES(l.scalar_type(), "plif_backward_cuda", [&] {
    // The slope sums first: they read the incoming gradient, which grad_logits may be.
    check_launch(launch_plif_slope_grad<scalar_t>(
                     l.data_ptr<scalar_t>(), g.data_ptr<scalar_t>(), scratch.data_ptr(), scratch_bytes,
                     grad_slopes.data_ptr<double>(), n, K, T, current_stream()),
                 "plif backward (slope gradients)");
    check_launch(launch_plif_backward_logits<scalar_t>(
                     l.data_ptr<scalar_t>(), g.data_ptr<scalar_t>(), s.data_ptr<double>(),
                     grad_logits.data_ptr<scalar_t>(), n, K, T, current_stream()),
                 "plif backward");
  });
  return {grad_logits, grad_slopes};
}

void mixture_component_forward(const torch::Tensor& logits, const torch::Tensor& log_prior,
                               const torch::Tensor& targets, torch::Tensor& a, torch::Tensor& row_max,
                               torch::Tensor& log_sum, int64_t k, double c, double kappa) {
  check_on_cuda(logits, "mixture_nll", "latent");
  check_same_device(logits, targets, "mixture_nll", "targets");
  check_same_device(logits, log_prior, "mixture_nll", "log_prior");
  const c10::cuda::CUDAGuard device(logits.device());
  const int64_t M = logits.size(0), N = logits.size(1), K = a.size(1);
  // The callers in ops/mixture_nll.cpp allocate these; a mismatch is a bug there, not a user error.
  for (const auto* out : {&a, &row_max, &log_sum}) {
    TORCH_INTERNAL_ASSERT(out->is_contiguous() && out->scalar_type() == logits.scalar_type());
    TORCH_INTERNAL_ASSERT(out->size(0) == M && out->size(1) == K);
  }
  TORCH_INTERNAL_ASSERT(logits.is_contiguous() && k < K);
  LMKIT_OP_CHECK(M <= std::numeric_limits<int32_t>::max(),
                 "mixture_nll: at most 2^31 − 1 contexts per call on CUDA, got " + integer_text(M));
  const auto prior = contiguous_as(log_prior, logits.scalar_type());
  const auto t = targets.contiguous();
  AT_DISPATCH_FLOATING_TYPES(logits.scalar_type(), "mixture_nll_cuda", [&] {
    check_launch(launch_mixture_component_forward<scalar_t>(
                     logits.data_ptr<scalar_t>(), prior.data_ptr<scalar_t>(), t.data_ptr<int64_t>(),
                     a.data_ptr<scalar_t>(), row_max.data_ptr<scalar_t>(), log_sum.data_ptr<scalar_t>(),
                     M, N, K, k, c, kappa,
                     current_stream()),
                 "mixture_nll");
  });
}

void mixture_component_backward(torch::Tensor& logits, const torch::Tensor& row_max,
                                const torch::Tensor& log_sum, const torch::Tensor& coef,
                                const torch::Tensor& targets, int64_t k, double c, double kappa) {
  check_on_cuda(logits, "mixture_nll", "latent");
  check_same_device(logits, targets, "mixture_nll", "targets");
  const c10::cuda::CUDAGuard device(logits.device());
  const int64_t M = logits.size(0), N = logits.size(1), K = row_max.size(1);
  TORCH_INTERNAL_ASSERT(logits.is_contiguous() && k < K);
  const auto maxima = contiguous_as(row_max, logits.scalar_type());
  const auto log_sums = contiguous_as(log_sum, logits.scalar_type());
  const auto scale = contiguous_as(coef, logits.scalar_type());
  const auto t = targets.contiguous();
  AT_DISPATCH_FLOATING_TYPES(logits.scalar_type(), "mixture_nll_backward_cuda", [&] {
    check_launch(launch_mixture_component_backward<scalar_t>(
                     logits.data_ptr<scalar_t>(), maxima.data_ptr<scalar_t>(), log_sums.data_ptr<scalar_t>(),
                     scale.data_ptr<scalar_t>(),
                     t.data_ptr<int64_t>(), M, N, K, k, c, kappa, current_stream()),
                 "mixture_nll backward");
  });
}

std::vector<std::pair<std::string, std::string>> device_facts(int index) {
  std::vector<std::pair<std::string, std::string>> facts;
  // CUDA versions are encoded as 1000·major + 10·minor.
  auto version = [](int v) { return integer_text(v / 1000) + "." + integer_text((v % 1000) / 10); };
  int driver = 0, runtime = 0;
  if (cudaDriverGetVersion(&driver) == cudaSuccess) facts.emplace_back("CUDA driver API", version(driver));
  if (cudaRuntimeGetVersion(&runtime) == cudaSuccess) facts.emplace_back("CUDA runtime", version(runtime));
  if (at::globalContext().hasCuDNN()) {
    // cuDNN 9 numbers its versions 10000·major + 100·minor + patch, cuDNN 8 1000·major + 100·minor + patch.
    const auto v = static_cast<std::int64_t>(at::detail::getCUDAHooks().versionCuDNN());
    const auto major = v >= 90000 ? v / 10000 : v / 1000, rest = v >= 90000 ? v % 10000 : v % 1000;
    facts.emplace_back("cuDNN", integer_text(major) + "." + integer_text(rest / 100) + "." + integer_text(rest % 100));
  } else {
    facts.emplace_back("cuDNN", "not available");
  }
  const auto* p = at::cuda::getDeviceProperties(index);
  facts.emplace_back("GPU", std::string(p->name));
  facts.emplace_back("GPU memory", fmt::format("{:.1f} GiB", static_cast<double>(p->totalGlobalMem) / (1024.0 * 1024.0 * 1024.0)));
  facts.emplace_back("compute capability", integer_text(p->major) + "." + integer_text(p->minor));
  facts.emplace_back("multiprocessors", integer_text(p->multiProcessorCount));
  return facts;
}

namespace {
namespace allocator = c10::cuda::CUDACachingAllocator;

// The allocator's per-device tables exist once Torch has initialised CUDA, which it does lazily, on
// the first allocation: before that a read is refused ("did you call init?"). Then a one-element
// tensor initialises it and is freed before the second read (a first read's peak may hold its 512
// bytes). Another allocator backend (PYTORCH_CUDA_ALLOC_CONF=backend:cudaMallocAsync) keeps no counts.
template <typename Read>
auto with_allocator(int index, Read read) {
  const auto device = static_cast<c10::DeviceIndex>(index < 0 ? static_cast<int>(c10::cuda::current_device()) : index);
  try {
    return read(device);
  } catch (const c10::Error&) {
    (void)torch::empty({1}, torch::TensorOptions().device(torch::kCUDA, device));
  }
  try {
    return read(device);
  } catch (const c10::Error& e) {
    throw EnvironmentError("device_memory: Torch's CUDA allocator gives no counts for cuda:" + integer_text(device) +
                           " (" + e.what_without_backtrace() +
                           "); its native allocator keeps them (PYTORCH_CUDA_ALLOC_CONF without backend:cudaMallocAsync)");
  }
}
}  // namespace

MemoryCounts memory_counts(int index) {
  return with_allocator(index, [](c10::DeviceIndex device) {
    const auto stats = allocator::getDeviceStats(device);
    // Entry 0 of each StatArray is the aggregate over the allocator's small and large pools.
    MemoryCounts m;
    m.index = device;
    m.allocated = stats.allocated_bytes[0].current;
    m.peak_allocated = stats.allocated_bytes[0].peak;
    m.reserved = stats.reserved_bytes[0].current;
    return m;
  });
}

void reset_peak_memory(int index) {
  with_allocator(index, [](c10::DeviceIndex device) {
    allocator::resetPeakStats(device);
    return 0;
  });
}

}  // namespace lmkit::ops::cuda

// (In namespace c10, where the macro's registerer type is declared.)
namespace c10 {
REGISTER_FREE_MEMORY_CALLBACK(lmkit_reclaim_tensor_memory, lmkit::ops::cuda::ReclaimTensorMemory)
}  // namespace c10
