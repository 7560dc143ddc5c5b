#include "runtime/core/tensor_memory.h"

#include <c10/core/CPUAllocator.h>

#include <algorithm>
#include <cstring>
#include <fstream>
#include <limits>
#include <mutex>
#include <new>
#include <string>
#include <thread>

#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/asan_interface.h>
#endif

namespace lmkit {
namespace {

// A counted allocation is the inner allocation with this header in its first kHeader bytes, the data
// after it: so the DataPtr's data and context are one pointer, as Torch's raw_allocate requires (its
// kernels' scratch buffers use it, e.g. gelu's), and the deleter finds the header from the data.
struct CountedHeader {
  c10::DataPtr inner;
  std::int64_t bytes;
  std::atomic<std::int64_t>* counter;
};
// c10 aligns host allocations to 64 bytes; a 64-byte header keeps the data so aligned.
constexpr std::size_t kHeader = 64;
static_assert(sizeof(CountedHeader) <= kHeader, "the header must fit before the data");

// The process-wide allocator: made once and never destroyed, so a tensor freed during the
// process's exit (after static destructors ran) still finds its counter.
std::atomic<CountingAllocator*> process_allocator{nullptr};

// The reclaimer, by value, and the thread it belongs to.
struct Reclaimer {
  TensorMemoryReclaim reclaim = nullptr;
  void* context = nullptr;
  std::thread::id thread;
};
std::mutex reclaimer_mutex;
Reclaimer reclaimer;
thread_local bool reclaiming = false;

// The caller's size in Torch's own words, which lmkit's messages translate ("out of memory: it
// asked for ..."; runtime/core/exception_text.cpp): the header is lmkit's, not the caller's.
[[noreturn]] void allocation_failed(std::size_t bytes) {
  TORCH_CHECK(false, "can't allocate memory: you tried to allocate ", bytes, " bytes.");
}

#if defined(__SANITIZE_ADDRESS__)
// Under ASan a write just before a tensor's data lands in lmkit's header: poisoned, it is reported.
void poison_header(void* header) { ASAN_POISON_MEMORY_REGION(header, kHeader); }
void unpoison_header(void* header) { ASAN_UNPOISON_MEMORY_REGION(header, kHeader); }
#else
void poison_header(void*) {}
void unpoison_header(void*) {}
#endif

}  // namespace

c10::DataPtr CountingAllocator::counted(std::size_t bytes) const {
  if (bytes > std::numeric_limits<std::size_t>::max() - kHeader) allocation_failed(bytes);
  c10::DataPtr inner;
  try {
    inner = inner_->allocate(bytes + kHeader);
  } catch (const c10::Error&) {
    // Out of memory, or a size no allocator can give: collect what a script left for its
    // collector, then try once more.
    if (!reclaim_tensor_memory()) allocation_failed(bytes);
    try {
      inner = inner_->allocate(bytes + kHeader);
    } catch (const c10::Error&) {
      allocation_failed(bytes);
    }
  }
  auto* base = static_cast<char*>(inner.get());
  void* data = base + kHeader;
  const auto device = inner.device();
  const auto n = static_cast<std::int64_t>(bytes);
  new (base) CountedHeader{std::move(inner), n, &bytes_};
  poison_header(base);
  const auto now = bytes_.fetch_add(n, std::memory_order_relaxed) + n;
  auto peak = peak_.load(std::memory_order_relaxed);
  while (now > peak && !peak_.compare_exchange_weak(peak, now, std::memory_order_relaxed)) {
  }
  return c10::DataPtr(data, data, &CountingAllocator::release, device);
}

void CountingAllocator::release(void* data) {
  if (data == nullptr) return;
  char* base = static_cast<char*>(data) - kHeader;
  unpoison_header(base);
  auto* header = reinterpret_cast<CountedHeader*>(base);
  header->counter->fetch_sub(header->bytes, std::memory_order_relaxed);
  c10::DataPtr inner = std::move(header->inner);
  header->~CountedHeader();
  // `inner` frees the whole block, header included, with the inner allocator's deleter.
}

void CountingAllocator::copy_data(void* destination, const void* source, std::size_t bytes) const {
  if (bytes > 0) std::memcpy(destination, source, bytes);
}

void count_host_tensor_memory() {
  static std::once_flag once;
  std::call_once(once, [] {
    auto* allocator = new CountingAllocator(c10::GetCPUAllocator());
    // The highest priority: c10 keeps an allocator set with a lower one from replacing this.
    c10::SetCPUAllocator(allocator, std::numeric_limits<std::uint8_t>::max());
    process_allocator.store(allocator);
  });
}

bool host_tensor_memory_counted() { return process_allocator.load() != nullptr; }

std::int64_t host_tensor_bytes() {
  const auto* allocator = process_allocator.load(std::memory_order_relaxed);
  return allocator ? allocator->bytes() : 0;
}

std::int64_t peak_host_tensor_bytes() {
  const auto* allocator = process_allocator.load(std::memory_order_relaxed);
  return allocator ? allocator->peak() : 0;
}

void reset_peak_host_tensor_bytes() {
  if (auto* allocator = process_allocator.load()) allocator->reset_peak();
}

CollectionPacer::CollectionPacer(std::int64_t floor, double growth)
    : floor_(std::max<std::int64_t>(0, floor)), growth_(std::max(1.0, growth)), threshold_(floor_) {}

void CollectionPacer::collected(std::int64_t after) {
  ++collections_;
  const double next = growth_ * static_cast<double>(std::max<std::int64_t>(0, after));
  const double largest = static_cast<double>(std::numeric_limits<std::int64_t>::max() / 2);
  threshold_ = std::max(floor_, static_cast<std::int64_t>(std::min(next, largest)));
}

CollectionPacer& host_collection_pacer() {
  thread_local CollectionPacer pacer;
  return pacer;
}

CollectionPacer& device_collection_pacer() {
  // A device's floor is larger: its allocator caches freed blocks, so a collection there returns
  // nothing to other processes and only lets the cache reuse them sooner.
  thread_local CollectionPacer pacer(256ll << 20);
  return pacer;
}

namespace {

// A "Name:  1234 kB" line of /proc/self/status in bytes; 0 where there is none.
std::int64_t status_kilobytes(const std::string& text, const char* name) {
  const auto at = text.find(name);
  if (at == std::string::npos) return 0;
  try {
    return std::stoll(text.substr(at + std::strlen(name))) * 1024;
  } catch (const std::exception&) {
    return 0;
  }
}

}  // namespace

TensorMemoryStatus tensor_memory_status() {
  TensorMemoryStatus status;
  status.host = host_tensor_bytes();
  status.peak_host = peak_host_tensor_bytes();
  std::ifstream file("/proc/self/status");
  const std::string text((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
  status.resident = status_kilobytes(text, "\nVmRSS:");
  status.peak_resident = status_kilobytes(text, "\nVmHWM:");
  status.collections = host_collection_pacer().collections();
  status.next_collection = host_collection_pacer().threshold();
  return status;
}

void reset_peak_tensor_memory() { reset_peak_host_tensor_bytes(); }

void set_tensor_memory_reclaimer(TensorMemoryReclaim reclaim, void* context) {
  std::lock_guard<std::mutex> lock(reclaimer_mutex);
  reclaimer = Reclaimer{reclaim, context, std::this_thread::get_id()};
}

void clear_tensor_memory_reclaimer(void* context) {
  std::lock_guard<std::mutex> lock(reclaimer_mutex);
  if (reclaimer.context == context) reclaimer = Reclaimer{};
}

bool reclaim_tensor_memory() {
  if (reclaiming) return false;
  Reclaimer r;
  {
    std::lock_guard<std::mutex> lock(reclaimer_mutex);
    r = reclaimer;
  }
  if (r.reclaim == nullptr || r.thread != std::this_thread::get_id()) return false;
  reclaiming = true;
  bool freed = false;
  try {
    freed = r.reclaim(r.context);
  } catch (...) {
    freed = false;  // a reclaimer that fails frees nothing; the allocation's own error is the one to see
  }
  reclaiming = false;
  return freed;
}

bool tensor_memory_reclaiming() { return reclaiming; }

}  // namespace lmkit
