// The bytes that tensors hold, as a number a garbage collector can be paced by.
//
// A garbage-collected language over Torch (lmkit's Lua) sees each tensor as a few bytes of its own
// heap, while the tensor holds megabytes — and, through its autograd graph, every activation saved
// behind it. Left to itself the collector never runs while gigabytes wait for it. Three parts fix
// that, in the way of Torch7's heap-tracking allocator and mlverse/torch's free-memory callback:
//   - a counting CPU allocator under Torch's own (count_host_tensor_memory), so the bytes of host
//     tensors are one atomic number, read at no cost;
//   - a pacer (CollectionPacer) that says when a full collection is due: when the tensors' bytes
//     outgrow `growth` times what the last collection left (and a floor), as Lua's own pause does
//     for its heap;
//   - a reclaimer (set_tensor_memory_reclaimer): before a host allocation fails for want of memory
//     (or, with lmkit's CUDA side, a device allocation on a nearly full device), it is called once —
//     the collection that may free enough — and the allocation is tried again.
// The policy lives here; bindings/ only calls the collector when it is told to.
#pragma once
#include <cstddef>
#include <cstdint>
#include <atomic>

#include "runtime/config/declared_result.h"
#include "runtime/core/torch.h"

namespace lmkit {

// Installs the counting allocator under every later host tensor (once per process; thread-safe;
// later calls do nothing). Tensors allocated before it keep their own deleters and are not counted.
void count_host_tensor_memory();
// Whether the counting allocator is installed.
bool host_tensor_memory_counted();

// Bytes of host tensors allocated through the counting allocator and not yet freed, and the most at
// once since the process began or the last reset_peak_host_tensor_bytes (0 when it is not installed).
std::int64_t host_tensor_bytes();
std::int64_t peak_host_tensor_bytes();
void reset_peak_host_tensor_bytes();

// An allocator that counts the bytes it hands out, on top of another (Torch's CPU allocator for the
// process-wide one; any allocator in tests) that aligns its blocks to at least 64 bytes: each block
// is 64 bytes larger than asked, the count and the inner block's owner kept in front of the data.
// Before an allocation of `inner` fails, the calling thread's reclaimer (if any) is called once and
// the allocation tried again.
class CountingAllocator final : public c10::Allocator {
 public:
  explicit CountingAllocator(c10::Allocator* inner) : inner_(inner) {}
  // Torch 1.13 declares allocate const; Torch 2.x dropped the const. One of the two overrides
  // whichever the headers declare (no `override` keyword, so both compile against each).
  c10::DataPtr allocate(std::size_t bytes) const { return counted(bytes); }
  c10::DataPtr allocate(std::size_t bytes) { return counted(bytes); }
  // Torch 2.x's Allocator requires copy_data (host memory: a plain copy).
  void copy_data(void* destination, const void* source, std::size_t bytes) const;
  // Every DataPtr it gives has this deleter and its data as context, so Torch's raw_allocate and
  // raw_deallocate (kernels' scratch buffers) work through it.
  c10::DeleterFnPtr raw_deleter() const override { return &CountingAllocator::release; }

  std::int64_t bytes() const { return bytes_.load(std::memory_order_relaxed); }
  std::int64_t peak() const { return peak_.load(std::memory_order_relaxed); }
  void reset_peak() { peak_.store(bytes(), std::memory_order_relaxed); }

 private:
  c10::DataPtr counted(std::size_t bytes) const;
  static void release(void* context);

  c10::Allocator* inner_;
  mutable std::atomic<std::int64_t> bytes_{0};
  mutable std::atomic<std::int64_t> peak_{0};
};

// When a full collection is due: after a collection that left `after` bytes, the next is due once
// the bytes exceed max(floor, growth · after). A collection that freed little thus lets the
// threshold climb with the live set (no collection per allocation when everything is reachable),
// and one that freed much brings it back down.
class CollectionPacer {
 public:
  explicit CollectionPacer(std::int64_t floor = 16ll << 20, double growth = 2.0);
  bool due(std::int64_t bytes) const { return bytes > threshold_; }
  void collected(std::int64_t after);
  std::int64_t threshold() const { return threshold_; }
  std::int64_t floor() const { return floor_; }
  double growth() const { return growth_; }
  std::int64_t collections() const { return collections_; }

 private:
  std::int64_t floor_;
  double growth_;
  std::int64_t threshold_;
  std::int64_t collections_ = 0;
};

// The calling thread's pacers: one for host tensors' bytes, one for the current CUDA device's (a
// GPU's memory is a budget of its own). Per thread, as a Lua state is run by one thread at a time.
CollectionPacer& host_collection_pacer();
CollectionPacer& device_collection_pacer();

// What lmkit.tensor_memory() shows: the counted bytes, the process's resident memory, and the
// calling thread's host pacer.
struct TensorMemoryStatus {
  std::int64_t host = 0;             // bytes in host tensors now
  std::int64_t peak_host = 0;        // the most at once since the start or the last reset
  std::int64_t resident = 0;         // the process's resident memory now (VmRSS; 0 where unknown)
  std::int64_t peak_resident = 0;    // its peak (VmHWM; 0 where unknown)
  std::int64_t collections = 0;      // full collections the host pacer asked for on this thread
  std::int64_t next_collection = 0;  // host bytes past which the next one is due
};
inline auto declared_result(config::Tag<TensorMemoryStatus>) {
  using config::result_field;
  return config::result_table(
      result_field("host", &TensorMemoryStatus::host, "bytes in host (CPU) tensors now"),
      result_field("peak_host", &TensorMemoryStatus::peak_host,
                   "the most bytes in host tensors at once since the start or lmkit.reset_peak_tensor_memory"),
      result_field("resident", &TensorMemoryStatus::resident, "the process's resident memory now (bytes; 0 where the system does not say)"),
      result_field("peak_resident", &TensorMemoryStatus::peak_resident, "the process's peak resident memory (bytes; VmHWM)"),
      result_field("collections", &TensorMemoryStatus::collections, "full collections lmkit ran because tensor bytes grew"),
      result_field("next_collection", &TensorMemoryStatus::next_collection,
                   "host tensor bytes past which the next full collection is due"));
}
TensorMemoryStatus tensor_memory_status();
// Starts a new host peak at the current bytes.
void reset_peak_tensor_memory();

// The process's reclaimer: what frees memory before an allocation fails (a full collection of the
// Lua state lmkit was opened in). It is called only on the thread that set it (the thread that runs
// that state), once per failing allocation, never from within itself. One at a time: a second
// set_tensor_memory_reclaimer replaces the first. A plain function and its argument, held by value:
// nothing of it lives on a stack that an error could unwind past.
using TensorMemoryReclaim = bool (*)(void* context);
void set_tensor_memory_reclaimer(TensorMemoryReclaim reclaim, void* context);
// Removes the reclaimer if it is the one set with `context` (a closing Lua state removes its own).
void clear_tensor_memory_reclaimer(void* context);

// Calls the reclaimer if it was set on this thread and is not running already; returns whether it
// ran and said it may have freed something. What the allocators call.
bool reclaim_tensor_memory();
// Whether the reclaimer is running on this thread now (code it runs must not start other work).
bool tensor_memory_reclaiming();

}  // namespace lmkit
