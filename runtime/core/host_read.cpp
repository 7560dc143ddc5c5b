#include "runtime/core/host_read.h"

#include <atomic>

#include "runtime/core/error.h"

namespace lmkit {
namespace {

std::atomic<std::int64_t> reads{0};

}  // namespace

std::vector<double> read_to_host(const torch::Tensor& values) {
  ++reads;
  if (values.is_meta()) {
    throw UsageError("read_to_host: a tensor on the meta device has no values to read");
  }
  const auto host = values.detach().reshape({-1}).to(torch::kCPU, torch::kFloat64).contiguous();
  const double* data = host.data_ptr<double>();
  return std::vector<double>(data, data + host.numel());
}

std::int64_t host_read_count() { return reads.load(); }

}  // namespace lmkit
