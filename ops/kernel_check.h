// Fused kernels that check themselves. The first use of a fused op (gss_log_softmax, plif,
// mixture_nll) with its own kernel on a device and dtype in a process runs that kernel beside the
// op's ATen composite in float64 on a small random case — forward and every gradient, a row longer
// than a CUDA block, logits of ±1000 — and compares. On agreement the fused kernel is used from then on;
// on disagreement lmkit warns once, naming the op, the device and the error, and the ATen path
// serves the rest of the process: never silently wrong numbers from a kernel that was never run on
// the user's GPU before.
//
// Tolerance: for each output, max |fused − reference| ≤ tol · (1 + max |reference|), where the
// reference is the ATen composite in float64 on the same device and the same (dtype-rounded)
// inputs; tol = 1e-5 for float32, 1e-11 for float64. Non-finite values fail. The ATen composite
// itself in float32 is held to the same float64 reference and tolerance (compare_composite: what
// `lmkit doctor` shows for every op on every device, since a fused kernel that fails falls back
// to it): a float32 composite can lose precision too, as mixture_nll's once did at ±1000 logits.
//
// LMKIT_KERNEL_CHECK (read at the first fused call, or set_kernel_check_mode): "on" (the default),
// "off" (trust the fused kernels unchecked), "strict" (a mismatch is an error, every time the op
// is called on that device and dtype).
#pragma once
#include <functional>
#include <utility>
#include <string>
#include <vector>

#include "runtime/core/torch.h"

namespace lmkit::ops {

enum class KernelCheckMode { on, off, strict };

// One path of a fused op (its own kernel, or its ATen composite) against the float64 reference,
// on one device and dtype.
struct KernelComparison {
  std::string op;
  std::string path;    // "fused kernel" or "ATen composite"

  std::string device;  // "cpu", "cuda:0"
  std::string dtype;   // "float32", "float64"
  bool passed = false;
  double error = 0;      // the largest normalised error over the outputs (see above)
  double tolerance = 0;  // what it is compared with
  std::string worst;     // the output with that error, e.g. "∂/∂logits (logits ±1000)"
  std::string failure;   // why the comparison could not run, if it could not (then passed = false)
  double seconds = 0;
};

// The fused ops, in a fixed order.
const std::vector<std::string>& fused_ops();

// Whether `op` has a kernel of its own on this device type in this build: the CPU kernels of
// gss_log_softmax and plif; on CUDA, every op when lmkit was built with its CUDA kernels. Other
// devices (and mixture_nll on the CPU) run the ATen composite, which needs no check.
bool has_fused_kernel(const std::string& op, const torch::Device& device);

KernelCheckMode kernel_check_mode();
void set_kernel_check_mode(KernelCheckMode mode);
// "on", "off", "strict" → the mode; anything else throws UsageError naming the text and the choices.
KernelCheckMode parse_kernel_check_mode(const std::string& text);
std::string kernel_check_mode_name(KernelCheckMode mode);

// Runs the comparison now (not cached, whatever the mode): for `lmkit doctor` and the tests.
// Throws UsageError when `op` has no fused kernel on `device`.
KernelComparison compare_fused_kernel(const std::string& op, const torch::Device& device,
                                      torch::ScalarType dtype);

// The op's ATen composite in `dtype` (float32: float64 is the reference itself) on the same cases,
// against the same reference and tolerance: on any device, whether or not the op has a kernel of
// its own there. Throws UsageError for an unknown op or another dtype.
KernelComparison compare_composite(const std::string& op, const torch::Device& device, torch::ScalarType dtype);

// What this build holds of CUDA: whether lmkit's kernels were compiled in, for which architectures
// ("80;90"; empty without), and facts of CUDA device `index` as (name, value) pairs — the GPU,
// its memory and compute capability, the driver's and the runtime's CUDA versions, cuDNN's
// version — empty without the CUDA kernels (Torch's own view is in at::show_config()).
bool cuda_kernels_built();
std::string cuda_kernel_architectures();
std::vector<std::pair<std::string, std::string>> cuda_device_facts(int index);

// The first-use comparisons made in this process, in order.
std::vector<KernelComparison> kernel_check_history();

// Forgets every first-use result, so that the next call of each op checks again (tests; doctor).
void reset_kernel_checks();

// For tests of this mechanism: while alive, every result of `op`'s fused kernel on `device_type`
// (its output and its gradients) is passed through `fault`, which may change it in place — a
// deliberately wrong kernel. The check results are forgotten when it starts and ends.
class ScopedKernelFault {
 public:
  ScopedKernelFault(std::string op, torch::DeviceType device_type, std::function<void(torch::Tensor&)> fault);
  ~ScopedKernelFault();
  ScopedKernelFault(const ScopedKernelFault&) = delete;
  ScopedKernelFault& operator=(const ScopedKernelFault&) = delete;

 private:
  std::pair<std::string, int> key_;
};

namespace detail {

// The ops' side. use_fused_kernel: whether `op` should run its own kernel for `input` (first use
// per device and dtype runs the check). fused_result: a fused kernel's result on its way out
// (identity unless a test installed a fault).
bool use_fused_kernel(const char* op, const torch::Tensor& input);
void fused_result(const char* op, torch::Tensor& result);

// One output of a check case: the checked path's value (the fused kernel's, or the ATen
// composite's in the checked dtype) and the float64 reference's value of the same thing.
struct CheckedOutput {
  std::string name;
  torch::Tensor checked;
  torch::Tensor reference;
};

// Check inputs: float64 values on the CPU drawn from a private generator (the global ones, and so
// every seeded run, are untouched), N(0, scale²).
torch::Tensor check_values(at::IntArrayRef sizes, uint64_t seed, double scale);

// Each op's cases (in its own .cpp, where its autograd function is); `fused`: the checked path is
// the op's own kernel, else its ATen composite.
std::vector<CheckedOutput> gss_log_softmax_check_cases(const torch::Device& device, torch::ScalarType dtype, bool fused);
std::vector<CheckedOutput> plif_check_cases(const torch::Device& device, torch::ScalarType dtype, bool fused);
std::vector<CheckedOutput> mixture_nll_check_cases(const torch::Device& device, torch::ScalarType dtype, bool fused);

}  // namespace detail
}  // namespace lmkit::ops
