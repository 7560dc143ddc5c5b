#include "runtime/core/device.h"

#include <dlfcn.h>

#include "runtime/core/error.h"
#include "runtime/core/number_text.h"

namespace lmkit {

std::string default_device_name() { return torch::cuda::is_available() ? "cuda" : "cpu"; }

torch::Device parse_device(const std::string& name) {
  const bool is_cuda = name == "cuda" || name.rfind("cuda:", 0) == 0;
  if (name != "cpu" && !is_cuda) {
    throw UsageError("unknown device '" + name + "' (expected \"cpu\", \"cuda\" or \"cuda:N\")");
  }
  if (is_cuda && !at::hasCUDA()) {
    // No device can help a Torch built without CUDA (Debian's libtorch): only another build can.
    throw UsageError("device '" + name +
                     "' is not usable here: this lmkit is built against a Torch without CUDA (see `lmkit --version`); "
                     "rebuild it against a PyTorch with CUDA, `bash scripts/setup.sh --torch PYTHON` on the GPU machine "
                     "(docs/development.md), or use \"cpu\"");
  }
  if (is_cuda && !torch::cuda::is_available()) {
    throw UsageError("device '" + name +
                     "' is not usable here: no CUDA device is visible to this Torch build "
                     "(see `lmkit --version`; CUDA_VISIBLE_DEVICES, the driver: nvidia-smi); use \"cpu\" or lmkit.device()");
  }
  try {
    torch::Device device(name);
    if (device.is_cuda() && device.has_index() &&
        device.index() >= static_cast<int>(torch::cuda::device_count())) {
      throw UsageError("device '" + name + "' does not exist: " +
                       integer_text(torch::cuda::device_count()) + " CUDA device(s) visible");
    }
    return device;
  } catch (const c10::Error&) {
    throw UsageError("malformed device '" + name + "' (expected \"cpu\", \"cuda\" or \"cuda:N\")");
  }
}

void seed_torch(std::uint64_t seed) {
  torch::manual_seed(seed);  // seeds the CUDA generators too when CUDA is present
}

namespace {
// OpenBLAS is found at run time: Torch may be linked against another BLAS, in which case the
// call is simply absent and only Torch's pool is set.
using OpenBlasSetThreads = void (*)(int);
using OpenBlasGetThreads = int (*)();
OpenBlasSetThreads find_openblas_set_threads() {
  return reinterpret_cast<OpenBlasSetThreads>(dlsym(RTLD_DEFAULT, "openblas_set_num_threads"));
}
OpenBlasGetThreads find_openblas_get_threads() {
  return reinterpret_cast<OpenBlasGetThreads>(dlsym(RTLD_DEFAULT, "openblas_get_num_threads"));
}
}  // namespace

void set_threads(int cores, int torch_threads, int blas_threads) {
  if (cores < 1 || cores > kMaxThreads) {
    throw UsageError("thread count must be in 1.." + integer_text(kMaxThreads) + ", got " + integer_text(cores));
  }
  for (const auto& [name, count] : {std::pair<const char*, int>{"Torch", torch_threads}, {"BLAS", blas_threads}}) {
    if (count < 0 || count > kMaxThreads) {
      throw UsageError(std::string(name) + " thread count must be in 1.." + integer_text(kMaxThreads) +
                       " (0: the default), got " + integer_text(count));
    }
  }
  torch::set_num_threads(torch_threads > 0 ? torch_threads : 1);
  if (auto set_blas = find_openblas_set_threads()) set_blas(blas_threads > 0 ? blas_threads : cores);
}

int get_threads() { return torch::get_num_threads(); }

int get_blas_threads() {
  auto get_blas = find_openblas_get_threads();
  return get_blas ? get_blas() : 0;
}

int cuda_device_count() { return torch::cuda::is_available() ? static_cast<int>(torch::cuda::device_count()) : 0; }

const config::BoundOptions<ThreadOptions>& declared_options(config::Tag<ThreadOptions>) {
  const config::Range counts{0.0, static_cast<double>(kMaxThreads)};
  static const config::BoundOptions<ThreadOptions> options(
      "set_threads", {{"torch", &ThreadOptions::torch, counts, "Torch's intra-op threads (0: 1)"},
                      {"blas", &ThreadOptions::blas, counts, "OpenBLAS's threads (0: the cores)"}});
  return options;
}

void use_threads(std::int64_t cores, const ThreadOptions& options) {
  // Checked before narrowing to int, which would turn 2^32 + 1 into 1 and -1e18 into 1486618624.
  if (cores < 1 || cores > kMaxThreads) {
    throw UsageError("thread count must be in 1.." + integer_text(kMaxThreads) + ", got " + integer_text(cores));
  }
  set_threads(static_cast<int>(cores), static_cast<int>(options.torch), static_cast<int>(options.blas));
}

std::pair<int, int> thread_counts() { return {get_threads(), get_blas_threads()}; }

}  // namespace lmkit
