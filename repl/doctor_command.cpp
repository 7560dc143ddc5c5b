#include "repl/doctor_command.h"

#include <exception>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include <ATen/Version.h>
#include <fmt/format.h>
#include <lua.hpp>

#include "ops/kernel_check.h"
#include "runtime/core/device.h"
#include "runtime/core/number_text.h"
#include "runtime/core/version.h"
#include "runtime/core/work_progress.h"
#include "runtime/training/device_smoke_test.h"

namespace lmkit::repl {
namespace {

struct Verdict {
  std::string check, result, detail;
};

void print_section(const std::string& title) { std::cout << "\n== " << title << "\n"; }

void print_pairs(const std::vector<std::pair<std::string, std::string>>& pairs) {
  std::size_t width = 0;
  for (const auto& [name, value] : pairs) width = std::max(width, name.size());
  for (const auto& [name, value] : pairs) std::cout << fmt::format("  {:<{}}  {}\n", name, width, value);
}

// The lines of Torch's own build configuration that say which CUDA, cuDNN and BLAS it has.
std::vector<std::pair<std::string, std::string>> torch_config_lines() {
  std::vector<std::pair<std::string, std::string>> lines;
  std::istringstream config(at::show_config());
  std::string line;
  while (std::getline(config, line)) {
    const auto first = line.find_first_not_of(" -");
    if (first == std::string::npos) continue;
    line = line.substr(first);
    for (const char* key : {"CUDA Runtime", "CuDNN", "NVCC architecture flags", "BLAS_INFO", "LAPACK is enabled",
                            "OpenMP", "CUDA_VERSION", "CUDNN_VERSION"}) {
      if (line.rfind(key, 0) == 0) lines.emplace_back("Torch build", line);
    }
  }
  return lines;
}

// The NVIDIA kernel driver's own line ("NVRM version: ... 580.159.04 ..."), where Linux shows it.
std::string nvidia_driver_line() {
  std::ifstream in("/proc/driver/nvidia/version");
  std::string line;
  if (!in || !std::getline(in, line)) return "";
  return line;
}

}  // namespace

int run_doctor(const DoctorOptions& options) {
  std::vector<Verdict> verdicts;
  const auto info = build_info();
  const std::string device_name = options.device.empty() ? default_device_name() : options.device;

  print_section("versions");
  std::vector<std::pair<std::string, std::string>> versions{
      {"lmkit", info.lmkit_version + (info.git_revision.empty() ? "" : " (git " + info.git_revision + ")")},
      {"Lua", LUA_RELEASE},
      {"Torch", info.torch_version},
      {"Torch CUDA", info.cuda_compiled ? (info.cuda_usable ? "usable, " + integer_text(info.cuda_device_count) +
                                                                  " device(s)"
                                                            : "compiled in, no usable device")
                                        : "not compiled in"},
  };
  for (const auto& line : torch_config_lines()) versions.push_back(line);
  print_pairs(versions);

  print_section("build");
  print_pairs({{"lmkit's CUDA kernels", ops::cuda_kernels_built()
                                            ? "compiled, architectures " + ops::cuda_kernel_architectures()
                                            : info.cuda_compiled
                                                  ? "not compiled (the fused ops run their ATen composites on CUDA)"
                                                  : "not compiled (this Torch has no CUDA)"},
               {"kernel self-check", ops::kernel_check_mode_name(ops::kernel_check_mode()) +
                                         " (LMKIT_KERNEL_CHECK: on, off or strict)"},
               {"CPU threads", integer_text(get_threads()) + " Torch, " + integer_text(get_blas_threads()) +
                                   " OpenBLAS"}});

  print_section("device " + device_name);
  torch::Device device(torch::kCPU);
  try {
    device = parse_device(device_name);
  } catch (const std::exception& e) {
    std::cout << "  not usable: " << e.what() << "\n";
    verdicts.push_back({"device " + device_name, "FAIL", e.what()});
  }
  const bool usable = verdicts.empty();
  if (usable && device.is_cuda()) {
    if (const auto driver = nvidia_driver_line(); !driver.empty()) print_pairs({{"NVIDIA driver", driver}});
    try {
      const auto facts = ops::cuda_device_facts(device.has_index() ? device.index() : 0);
      if (facts.empty()) {
        std::cout << "  (lmkit was built without its CUDA kernels: no device facts beyond Torch's)\n";
      } else {
        print_pairs(facts);
      }
    } catch (const std::exception& e) {
      std::cout << "  the device's facts could not be read: " << e.what() << "\n";
      verdicts.push_back({"device " + device_name + " facts", "FAIL", e.what()});
    }
  } else if (usable) {
    std::cout << "  the CPU (the smoke test's reference is the CPU itself: a determinism check)\n";
  }

  if (usable) {
    // Each fused op on both of its paths against the float64 reference: its own kernel where it has
    // one here (the path a first use checks), and its float32 ATen composite, which serves wherever
    // there is no kernel or the kernel failed its check.
    print_section("fused ops against a float64 reference");
    auto report = [&](const ops::KernelComparison& r) {
      const std::string detail =
          r.failure.empty() ? fmt::format("error {:.2e} (tolerance {:.0e}), largest in {}  ({:.2f} s)", r.error, r.tolerance, r.worst, r.seconds)
                            : "could not run: " + r.failure;
      std::cout << fmt::format("  {:<16} {:<14} {:<8} {}  {}\n", r.op, r.path, r.dtype, r.passed ? "pass" : "FAIL", detail);
      const std::string path = r.path == "fused kernel" ? "fused" : "composite";
      verdicts.push_back({r.op + " " + path + " " + r.dtype, r.passed ? "pass" : "FAIL",
                          r.failure.empty() ? fmt::format("error {:.2e} (tolerance {:.0e})", r.error, r.tolerance)
                                            : r.failure});
    };
    for (const auto& op : ops::fused_ops()) {
      if (ops::has_fused_kernel(op, device)) {
        for (const auto dtype : {torch::kFloat32, torch::kFloat64}) report(ops::compare_fused_kernel(op, device, dtype));
      } else {
        std::cout << fmt::format("  {:<16} {:<14} no kernel of its own on {}: runs its ATen composite\n", op,
                                 "fused kernel", device.str());
      }
      report(ops::compare_composite(op, device, torch::kFloat32));
    }

    // Every registered head and every other registered encoder, each in a setup that rounding noise cannot throw
    // off (training/device_smoke_test.h), so a mismatch here is a bug of the device's path.
    print_section(fmt::format("training, {} steps on {} against the CPU (no dropout, same seed)", options.steps, device.str()));
    training::SmokeTestOptions smoke;
    smoke.steps = options.steps;
    // Each head's line as soon as it has run, and a progress line on a terminal meanwhile.
    // The bar never reaches its own end (which would print a final line between two heads' lines):
    // the last head's line replaces it.
    if (auto progress = work_progress("lmkit doctor: training check", "steps")) {
      smoke.on_step = [progress](std::int64_t done, std::int64_t total) { progress(done, total + 1); };
    }
    const bool progress_shown = static_cast<bool>(smoke.on_step);
    smoke.on_result = [&](const training::SmokeTestResult& r) {
      if (progress_shown) std::cerr << "\r\033[K" << std::flush;  // the result line replaces the progress line
      std::string detail;
      if (!r.failure.empty()) {
        detail = r.failure;
      } else {
        detail = fmt::format("max |Δloss| {:.2e} (tolerance {:.0e}), loss {:.4f} → {:.4f}  ({:.1f} s)", r.max_difference,
                             smoke.tolerance, r.device_losses.front(), r.device_losses.back(), r.seconds);
        if (r.first_exceeding_step > 0) detail += fmt::format("; first over the tolerance at step {}", r.first_exceeding_step);
      }
      std::cout << fmt::format("  {:<20} {}  {}\n", r.head, r.passed ? "pass" : "FAIL", detail);
      std::cout << std::flush;
      verdicts.push_back({"training " + r.head, r.passed ? "pass" : "FAIL",
                          r.failure.empty() ? fmt::format("max |Δloss| {:.2e}", r.max_difference) : r.failure});
    };
    training::device_smoke_test(device, smoke);
  }

  print_section("verdict");
  std::size_t width = 5;
  for (const auto& v : verdicts) width = std::max(width, v.check.size());
  std::cout << fmt::format("  {:<{}}  {:<6}  {}\n", "check", width, "result", "detail");
  int failed = 0;
  for (const auto& v : verdicts) {
    std::cout << fmt::format("  {:<{}}  {:<6}  {}\n", v.check, width, v.result, v.detail);
    if (v.result != "pass") ++failed;
  }
  if (failed == 0) {
    std::cout << "\nEverything passed on " << device_name << ".\n";
    return 0;
  }
  std::cout << "\n" << failed << " of " << verdicts.size() << " checks failed on " << device_name
            << (usable ? ". Attach this output to a bug report.\n" : ".\n");
  return 1;
}

}  // namespace lmkit::repl
