// Values read back from a tensor's device to the host. On a GPU a read waits for every kernel
// queued before it (a synchronisation), so the training and evaluation loops read through here
// only where they must — an evaluation reads its total once — and tests count the reads. A
// training step never waits: its loss and gradient norm come back through a DeferredHostRead,
// one step late (runtime/training/trainer_loop.cpp).
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "runtime/core/error.h"
#include "runtime/core/torch.h"

namespace lmkit {

// Every element of `values` (any device, any real dtype), as float64 on the host, in one copy.
std::vector<double> read_to_host(const torch::Tensor& values);

// How many read_to_host calls this process has made (all threads).
std::int64_t host_read_count();

// What read_to_host throws while a HostReadsRefused is alive.
class HostReadRefused : public EnvironmentError {
 public:
  using EnvironmentError::EnvironmentError;
};

// While one is alive, read_to_host refuses every read, on any thread, with HostReadRefused naming
// `during`: set around a CUDA graph's capture (and its rehearsal on the CPU, step_graphs.h). A
// capture records device work to replay later, so a read of values in it has nothing to read —
// CUDA ends the capture with an error of its own; this says which read it was, before any of the
// step's work is recorded past it. Process-wide, as CUDA's capture mode is; scopes nest, and may
// end in any order (a refused read names the latest still alive).
class HostReadsRefused {
 public:
  // during: not empty (std::logic_error).
  explicit HostReadsRefused(std::string during);
  ~HostReadsRefused();
  HostReadsRefused(const HostReadsRefused&) = delete;
  HostReadsRefused& operator=(const HostReadsRefused&) = delete;
};

// Values on their way to the host without waiting for them. start() queues the copy behind the
// work that computes them (on a GPU: into page-locked host memory, with an event after it) and
// returns at once; take() returns them, waiting only for that copy if it has not landed yet — by
// then the device has usually moved on to the next step's work, so the wait overlaps it. On the
// CPU there is nothing to wait for: the values are taken as they are. No read_to_host, no .item().
class DeferredHostRead {
 public:
  DeferredHostRead();
  ~DeferredHostRead();
  DeferredHostRead(DeferredHostRead&&) noexcept;
  DeferredHostRead& operator=(DeferredHostRead&&) noexcept;

  // Any device, any real dtype; read as float64. Replaces an earlier read not yet taken.
  void start(const torch::Tensor& values);
  bool started() const;
  // Whether take() would return without waiting.
  bool ready() const;
  // The values (float64), in order; the read is then no longer started.
  std::vector<double> take();

 private:
  struct Copy;
  std::unique_ptr<Copy> copy_;
};

}  // namespace lmkit
