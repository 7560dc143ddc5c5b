#include "runtime/core/exception_text.h"

#include <c10/util/Exception.h>

#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
#include <map>
#include <regex>
#include <string>

#include "runtime/core/host_memory.h"
#include "runtime/core/number_text.h"

namespace lmkit {
namespace {

std::string way_out_of_memory() {
  return "Use smaller sizes (a smaller vocabulary, K, batch or bptt), or compute in pieces.";
}

// Replaces each match of `pattern` (its first group a 0-based count) with `before` + count+1 + `after`.
std::string one_based(const std::string& text, const std::regex& pattern, const std::string& before,
                      const std::string& after) {
  std::string out;
  auto begin = std::sregex_iterator(text.begin(), text.end(), pattern);
  std::size_t last = 0;
  for (auto it = begin; it != std::sregex_iterator(); ++it) {
    const auto& m = *it;
    out.append(text, last, static_cast<std::size_t>(m.position(0)) - last);
    const auto value = std::stoll(m[1].str());
    out += before + integer_text(value + 1) + after;
    last = static_cast<std::size_t>(m.position(0) + m.length(0));
  }
  out.append(text, last, std::string::npos);
  return out;
}

std::string shapes_one_based(const std::string& message) {
  static const std::regex matmul(R"(mat1 and mat2 shapes cannot be multiplied \((\d+)x(\d+) and (\d+)x(\d+)\))");
  std::smatch m;
  if (std::regex_search(message, m, matmul)) {
    return fmt::format("sizes [{}, {}] and [{}, {}] cannot be multiplied: the first's size {} (its dimension 2) must "
                       "equal the second's size {} (its dimension 1)",
                       m[1].str(), m[2].str(), m[3].str(), m[4].str(), m[2].str(), m[3].str());
  }
  // Only where Torch speaks of sizes: other messages may carry numbers that are not dimensions.
  if (message.find("size") == std::string::npos) return message;
  static const std::regex dimension(R"(\bdimension (\d+)\b)");
  static const std::regex tensor_number(R"(tensor number (\d+) in the list)");
  static const std::regex entry(R"(\bat entry (\d+)\b)");
  auto out = one_based(message, dimension, "dimension ", "");
  out = one_based(out, tensor_number, "tensor ", " of the list");
  out = one_based(out, entry, "at entry ", "");
  if (out != message) out += " (dimensions and entries counted from 1)";
  return out;
}

}  // namespace

std::string allocation_failure_text() {
  return "out of memory: an allocation failed (this machine has " + gibibytes(physical_memory_bytes()) + ", " +
         gibibytes(available_memory_bytes()) + " available now). " + way_out_of_memory();
}

std::string torch_error_in_lmkit_words(const std::string& message) {
  // The CPU allocator: "... DefaultCPUAllocator: can't allocate memory: you tried to allocate N bytes ...".
  static const std::regex cpu_allocation(R"(can't allocate memory: you tried to allocate (\d+) bytes)");
  std::smatch m;
  if (std::regex_search(message, m, cpu_allocation)) {
    const double bytes = std::stod(m[1].str());
    // What the caller put before Torch's "[enforce fail at ...]" says who asked ("making the head ...: ").
    const auto context = message.substr(0, std::min(message.find("[enforce fail"), static_cast<std::size_t>(m.position(0))));
    return fmt::format("{}out of memory: it asked for {} ({} bytes) at once, and this machine has {} ({} available now). {}",
                       context, gibibytes(static_cast<std::int64_t>(bytes)), integer_text(static_cast<std::int64_t>(bytes)),
                       gibibytes(physical_memory_bytes()), gibibytes(available_memory_bytes()), way_out_of_memory());
  }
  // CUDA's caching allocator: "CUDA out of memory. Tried to allocate 2.00 GiB (GPU 0; ...".
  static const std::regex gpu_allocation(R"(out of memory\. Tried to allocate ([0-9.]+ [KMGTP]?i?B))");
  if (std::regex_search(message, m, gpu_allocation)) {
    return "out of GPU memory: it asked for " + m[1].str() + " at once. " + way_out_of_memory() +
           " (Torch's report: " + message.substr(0, message.find('\n')) + ")";
  }
  if (message.find("does not require grad and does not have a grad_fn") != std::string::npos) {
    return "nothing to differentiate: this value does not depend on any tensor that requires grad (made with "
           "{requires_grad = true}, a model's parameters unless frozen), or it was computed inside lmkit.no_grad. "
           "Check that the model's parameters are not all frozen (m:parameters(), p:requires_grad_(true)).";
  }
  if (message.find("backward through the graph a second time") != std::string::npos) {
    return "this value's graph has been backpropagated already and its saved intermediate values are freed: "
           "compute it again (a fresh forward pass) before each backward.";
  }
  // A kernel missing for a dtype: "\"linalg_svd_cpu\" not implemented for 'Half'".
  static const std::regex missing_kernel(R"re("([A-Za-z0-9_]+)" not implemented for '([A-Za-z0-9]+)')re");
  if (std::regex_search(message, m, missing_kernel)) {
    static const std::map<std::string, std::string> lua_names = {
        {"Half", "float16"}, {"BFloat16", "bfloat16"}, {"Float", "float32"}, {"Double", "float64"},
        {"Long", "int64"},   {"Int", "int32"},         {"Bool", "bool"},     {"Byte", "uint8"}};
    const auto found = lua_names.find(m[2].str());
    const auto dtype = found != lua_names.end() ? found->second : m[2].str();
    return "this operation does not take " + dtype + " tensors here (Torch has no " + m[1].str() + " kernel for " +
           dtype + "): convert first, e.g. t:float() (float32) or t:double() (float64); lmkit's analyses compute in "
           "float32 or float64.";
  }
  return shapes_one_based(message);
}

std::string describe_exception(std::exception_ptr error) {
  try {
    std::rethrow_exception(error);
  } catch (const c10::Error& e) {
    return torch_error_in_lmkit_words(e.what_without_backtrace());
  } catch (const std::bad_alloc&) {
    return allocation_failure_text();
  } catch (const std::exception& e) {
    return e.what();
  } catch (...) {
    return "unknown C++ exception";
  }
}

}  // namespace lmkit
