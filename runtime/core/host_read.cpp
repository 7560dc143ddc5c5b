#include "runtime/core/host_read.h"

#include <atomic>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <utility>
#include <vector>

#include <c10/core/Event.h>
#include <c10/core/impl/DeviceGuardImplInterface.h>

#include "runtime/core/error.h"
#include "runtime/core/number_text.h"
#include "runtime/core/polling_wait.h"

namespace lmkit {
namespace {

std::atomic<std::int64_t> reads{0};

// The scopes alive now, in the order they began (each may end in any order, on any thread); a
// refused read names the latest. The flag spares the lock on every read.
std::atomic<bool> refusing{false};
std::mutex refusal_mutex;
std::vector<std::pair<const HostReadsRefused*, std::string>>& refusals() {
  // Never destroyed: a read may come during the process's exit.
  static auto* alive = new std::vector<std::pair<const HostReadsRefused*, std::string>>;
  return *alive;
}

}  // namespace

HostReadsRefused::HostReadsRefused(std::string during) {
  if (during.empty()) throw std::logic_error("HostReadsRefused: say during what reads are refused");
  std::lock_guard<std::mutex> lock(refusal_mutex);
  refusals().emplace_back(this, std::move(during));
  refusing = true;
}

HostReadsRefused::~HostReadsRefused() {
  std::lock_guard<std::mutex> lock(refusal_mutex);
  auto& alive = refusals();
  for (auto it = alive.begin(); it != alive.end(); ++it) {
    if (it->first == this) {
      alive.erase(it);
      break;
    }
  }
  refusing = !alive.empty();
}

std::vector<double> read_to_host(const torch::Tensor& values) {
  if (refusing) {
    std::string during;
    {
      std::lock_guard<std::mutex> lock(refusal_mutex);
      if (!refusals().empty()) during = refusals().back().second;
    }
    if (!during.empty()) {
      const auto n = values.numel();
      throw HostReadRefused("a read to the host (read_to_host of " + integer_text(n) + (n == 1 ? " value" : " values") +
                            " on " + values.device().str() + ") during " + during +
                            ", which cannot hold one; the step must keep its numbers on the device");
    }
  }
  ++reads;
  if (values.is_meta()) {
    throw UsageError("read_to_host: a tensor on the meta device has no values to read");
  }
  const auto host = values.detach().reshape({-1}).to(torch::kCPU, torch::kFloat64).contiguous();
  const double* data = host.data_ptr<double>();
  return std::vector<double>(data, data + host.numel());
}

std::int64_t host_read_count() { return reads.load(); }

struct DeferredHostRead::Copy {
  torch::Tensor host;               // float64, contiguous; page-locked when copied from a GPU
  std::optional<c10::Event> event;  // recorded after the copy on the device's stream
};

DeferredHostRead::DeferredHostRead() = default;
DeferredHostRead::~DeferredHostRead() = default;
DeferredHostRead::DeferredHostRead(DeferredHostRead&&) noexcept = default;
DeferredHostRead& DeferredHostRead::operator=(DeferredHostRead&&) noexcept = default;

void DeferredHostRead::start(const torch::Tensor& values) {
  if (values.is_meta()) throw UsageError("DeferredHostRead: a tensor on the meta device has no values to read");
  auto copy = std::make_unique<Copy>();
  const auto flat = values.detach().reshape({-1}).to(torch::kFloat64);
  if (flat.device().is_cpu()) {
    copy->host = flat.contiguous();
  } else {
    // Page-locked memory lets the copy run asynchronously; an event marks its end on the stream
    // that computed the values.
    // host: the copy's destination, page-locked host memory by design
    copy->host = torch::empty({flat.numel()}, torch::TensorOptions().dtype(torch::kFloat64).pinned_memory(true));
    copy->host.copy_(flat, /*non_blocking=*/true);
    const auto device = flat.device();
    const auto stream = c10::impl::getDeviceGuardImpl(device.type())->getStream(device);
    copy->event.emplace(device.type());
    copy->event->record(stream);
  }
  copy_ = std::move(copy);
}

bool DeferredHostRead::started() const { return copy_ != nullptr; }

bool DeferredHostRead::ready() const { return copy_ != nullptr && (!copy_->event || copy_->event->query()); }

std::vector<double> DeferredHostRead::take() {
  if (copy_ == nullptr) throw std::logic_error("DeferredHostRead::take: nothing was started");
  // Polled with growing sleeps, not spun: Torch 1.13's events have no blocking wait, and the
  // training thread should leave its core to the data loader and the other tasks on the node.
  if (copy_->event && !copy_->event->query()) wait_until([this] { return copy_->event->query(); });
  const double* data = copy_->host.data_ptr<double>();
  std::vector<double> values(data, data + copy_->host.numel());
  copy_.reset();
  return values;
}

}  // namespace lmkit
