#include "ops/kernel_check.h"

#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <exception>
#include <limits>
#include <map>
#include <mutex>
#include <optional>
#include <tuple>

#include <ATen/CPUGeneratorImpl.h>
#include <fmt/format.h>

#include "runtime/core/error.h"
#include "runtime/core/number_text.h"
#include "runtime/core/warning.h"
#ifdef LMKIT_OPS_CUDA
#include "ops/cuda/dispatch.h"
#endif

namespace lmkit::ops {
namespace {

using CaseFunction = std::vector<detail::CheckedOutput> (*)(const torch::Device&, torch::ScalarType, bool);

struct FusedOp {
  const char* name;
  bool has_cpu_kernel;
  CaseFunction cases;
};

const std::vector<FusedOp>& op_table() {
  static const std::vector<FusedOp> table{
      {"gss_log_softmax", true, &detail::gss_log_softmax_check_cases},
      {"plif", true, &detail::plif_check_cases},
      {"mixture_nll", false, &detail::mixture_nll_check_cases},
  };
  return table;
}

const FusedOp* find_op(const std::string& op) {
  for (const auto& entry : op_table()) {
    if (op == entry.name) return &entry;
  }
  return nullptr;
}

double tolerance_for(torch::ScalarType dtype) { return dtype == torch::kFloat64 ? 1e-11 : 1e-5; }

std::string dtype_name(torch::ScalarType dtype) { return dtype == torch::kFloat64 ? "float64" : "float32"; }

// The process-wide state: the mode, the first-use results by (op, device, dtype), the faults.
struct CheckState {
  std::recursive_mutex mutex;
  std::optional<KernelCheckMode> mode;
  std::map<std::tuple<std::string, std::string, int>, KernelComparison> results;
  std::vector<KernelComparison> history;
  std::map<std::pair<std::string, int>, std::function<void(torch::Tensor&)>> faults;
  std::atomic<bool> any_fault{false};
};

CheckState& state() {
  static CheckState s;
  return s;
}

KernelCheckMode mode_locked(CheckState& s) {
  if (!s.mode) {
    const char* text = std::getenv("LMKIT_KERNEL_CHECK");
    if (text == nullptr || *text == '\0') {
      s.mode = KernelCheckMode::on;
    } else {
      try {
        s.mode = parse_kernel_check_mode(text);
      } catch (const UsageError& e) {
        throw EnvironmentError(std::string("environment variable LMKIT_KERNEL_CHECK: ") + e.what());
      }
    }
  }
  return *s.mode;
}

std::string mismatch_text(const KernelComparison& r) {
  const std::string what =
      r.failure.empty()
          ? "disagrees with its ATen composite: " + r.worst + " off by " + fmt::format("{:.3g}", r.error) +
                " (relative to the reference's scale; tolerance " + fmt::format("{:.0e}", r.tolerance) + ")"
          : "failed to run its self-check: " + r.failure;
  return r.op + ": the fused kernel on " + r.device + " (" + r.dtype + ") " + what;
}

std::string strict_text(const KernelComparison& r) {
  return mismatch_text(r) +
         " (LMKIT_KERNEL_CHECK=strict; with LMKIT_KERNEL_CHECK=on lmkit would warn and use the ATen composite instead)";
}

}  // namespace

const std::vector<std::string>& fused_ops() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> v;
    for (const auto& entry : op_table()) v.emplace_back(entry.name);
    return v;
  }();
  return names;
}

bool has_fused_kernel(const std::string& op, const torch::Device& device) {
  const auto* entry = find_op(op);
  if (entry == nullptr) return false;
  if (device.is_cpu()) return entry->has_cpu_kernel;
#ifdef LMKIT_OPS_CUDA
  if (device.is_cuda()) return true;
#endif
  return false;
}

KernelCheckMode parse_kernel_check_mode(const std::string& text) {
  if (text == "on") return KernelCheckMode::on;
  if (text == "off") return KernelCheckMode::off;
  if (text == "strict") return KernelCheckMode::strict;
  throw UsageError("kernel check mode must be 'on', 'off' or 'strict', got '" + text + "'");
}

std::string kernel_check_mode_name(KernelCheckMode mode) {
  switch (mode) {
    case KernelCheckMode::off: return "off";
    case KernelCheckMode::strict: return "strict";
    case KernelCheckMode::on: break;
  }
  return "on";
}

KernelCheckMode kernel_check_mode() {
  auto& s = state();
  std::lock_guard<std::recursive_mutex> lock(s.mutex);
  return mode_locked(s);
}

void set_kernel_check_mode(KernelCheckMode mode) {
  auto& s = state();
  std::lock_guard<std::recursive_mutex> lock(s.mutex);
  s.mode = mode;
}

namespace {

const FusedOp& known_op(const std::string& op) {
  const auto* entry = find_op(op);
  if (entry == nullptr) {
    std::string known;
    for (const auto& name : fused_ops()) known += (known.empty() ? "" : ", ") + name;
    throw UsageError("no fused op named '" + op + "' (fused ops: " + known + ")");
  }
  return *entry;
}

// Runs `entry`'s cases with the checked path (`fused`: its own kernel, else its ATen composite) in
// `dtype` against the float64 reference.
KernelComparison compare_path(const FusedOp& entry, bool fused, const torch::Device& device, torch::ScalarType dtype) {
  KernelComparison result;
  result.op = entry.name;
  result.path = fused ? "fused kernel" : "ATen composite";
  result.device = device.str();
  result.dtype = dtype_name(dtype);
  result.tolerance = tolerance_for(dtype);
  const auto start = std::chrono::steady_clock::now();
  try {
    // Gradients are part of the check, whatever mode the caller is in (evaluation, inference).
    c10::InferenceMode not_inference(false);
    torch::AutoGradMode grad(true);
    for (const auto& output : entry.cases(device, dtype, fused)) {
      const auto checked = output.checked.detach().to(torch::kCPU, torch::kFloat64);
      const auto reference = output.reference.detach().to(torch::kCPU, torch::kFloat64);
      double error = 0;
      if (checked.sizes() != reference.sizes()) {
        error = std::numeric_limits<double>::infinity();
      } else if (checked.numel() > 0) {
        const double scale = 1 + reference.abs().max().item<double>();
        error = (checked - reference).abs().max().item<double>() / scale;
        if (!std::isfinite(error)) error = std::numeric_limits<double>::infinity();
      }
      if (result.worst.empty() || error > result.error) {
        result.error = error;
        result.worst = output.name;
      }
    }
    result.passed = result.error <= result.tolerance;
  } catch (const std::exception& e) {
    result.passed = false;
    result.failure = e.what();
  }
  result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return result;
}

}  // namespace

KernelComparison compare_fused_kernel(const std::string& op, const torch::Device& device, torch::ScalarType dtype) {
  const auto& entry = known_op(op);
  if (!has_fused_kernel(op, device)) {
    throw UsageError(op + " has no fused kernel on " + device.str() + " in this build (it runs its ATen composite there)");
  }
  if (dtype != torch::kFloat32 && dtype != torch::kFloat64) {
    throw UsageError(op + ": the fused kernels take float32 or float64, got " + std::string(c10::toString(dtype)));
  }
  return compare_path(entry, true, device, dtype);
}

KernelComparison compare_composite(const std::string& op, const torch::Device& device, torch::ScalarType dtype) {
  const auto& entry = known_op(op);
  if (dtype != torch::kFloat32) {
    throw UsageError(op + ": the ATen composite is checked in float32 (in float64 it is the reference itself), got " +
                     std::string(c10::toString(dtype)));
  }
  return compare_path(entry, false, device, dtype);
}

bool cuda_kernels_built() {
#ifdef LMKIT_OPS_CUDA
  return true;
#else
  return false;
#endif
}

std::string cuda_kernel_architectures() {
#ifdef LMKIT_OPS_CUDA_ARCHITECTURES
  return LMKIT_OPS_CUDA_ARCHITECTURES;
#else
  return "";
#endif
}

std::vector<std::pair<std::string, std::string>> cuda_device_facts(int index) {
#ifdef LMKIT_OPS_CUDA
  return cuda::device_facts(index);
#else
  (void)index;
  return {};
#endif
}

std::vector<KernelComparison> kernel_check_history() {
  auto& s = state();
  std::lock_guard<std::recursive_mutex> lock(s.mutex);
  return s.history;
}

void reset_kernel_checks() {
  auto& s = state();
  std::lock_guard<std::recursive_mutex> lock(s.mutex);
  s.results.clear();
  s.history.clear();
}

ScopedKernelFault::ScopedKernelFault(std::string op, torch::DeviceType device_type,
                                     std::function<void(torch::Tensor&)> fault)
    : key_(std::move(op), static_cast<int>(device_type)) {
  auto& s = state();
  std::lock_guard<std::recursive_mutex> lock(s.mutex);
  s.faults[key_] = std::move(fault);
  s.any_fault = true;
  s.results.clear();
}

ScopedKernelFault::~ScopedKernelFault() {
  auto& s = state();
  std::lock_guard<std::recursive_mutex> lock(s.mutex);
  s.faults.erase(key_);
  s.any_fault = !s.faults.empty();
  s.results.clear();
}

namespace detail {

bool use_fused_kernel(const char* op, const torch::Tensor& input) {
  const auto device = input.device();
  if (!has_fused_kernel(op, device)) return false;
  auto& s = state();
  const auto dtype = input.scalar_type();
  if (dtype != torch::kFloat32 && dtype != torch::kFloat64) return true;  // the op's own check names it
  const auto key = std::make_tuple(std::string(op), device.str(), static_cast<int>(dtype));
  KernelCheckMode mode;
  {
    std::lock_guard<std::recursive_mutex> lock(s.mutex);
    mode = mode_locked(s);
    if (mode == KernelCheckMode::off) return true;
    const auto found = s.results.find(key);
    if (found != s.results.end()) {
      if (found->second.passed) return true;
      if (mode == KernelCheckMode::strict) throw EnvironmentError(strict_text(found->second));
      return false;
    }
  }
  // The comparison runs without the lock: its backward may run on the autograd engine's device
  // threads, which take the lock for an injected fault. Two threads may both compare on a first
  // use; the first result stored counts, and only its thread warns.
  auto result = compare_fused_kernel(op, device, dtype);
  bool first = false;
  KernelComparison stored;
  {
    std::lock_guard<std::recursive_mutex> lock(s.mutex);
    const auto [where, inserted] = s.results.emplace(key, result);
    first = inserted;
    if (inserted) s.history.push_back(result);
    stored = where->second;
  }
  if (stored.passed) return true;
  if (mode == KernelCheckMode::strict) throw EnvironmentError(strict_text(stored));
  if (first) {
    warn(mismatch_text(stored) +
         ". lmkit uses the ATen composite for this op, device and dtype for the rest of the process. "
         "Please report it with the output of `lmkit doctor --device " + stored.device +
         "`; LMKIT_KERNEL_CHECK=strict makes this an error, LMKIT_KERNEL_CHECK=off skips the check.");
  }
  return false;
}

void fused_result(const char* op, torch::Tensor& result) {
  auto& s = state();
  if (!s.any_fault) return;
  std::function<void(torch::Tensor&)> fault;
  {
    std::lock_guard<std::recursive_mutex> lock(s.mutex);
    const auto found = s.faults.find({op, static_cast<int>(result.device().type())});
    if (found == s.faults.end()) return;
    fault = found->second;
  }
  torch::NoGradGuard no_grad;
  fault(result);
}

torch::Tensor check_values(at::IntArrayRef sizes, uint64_t seed, double scale) {
  auto generator = at::detail::createCPUGenerator(seed);
  // host: drawn by a seeded CPU generator, the same case on every device; callers move it there
  return torch::randn(sizes, generator, torch::TensorOptions().dtype(torch::kFloat64)) * scale;
}

}  // namespace detail
}  // namespace lmkit::ops
