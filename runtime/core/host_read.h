// Values read back from a tensor's device to the host. On a GPU a read waits for every kernel
// queued before it (a synchronisation), so the training and evaluation loops read through here
// only where they must — a training step reads its loss and gradient norm once, for the NaN check
// and the clipping coefficient; an evaluation reads its total once — and tests count the reads.
#pragma once
#include <cstdint>
#include <vector>

#include "runtime/core/torch.h"

namespace lmkit {

// Every element of `values` (any device, any real dtype), as float64 on the host, in one copy.
std::vector<double> read_to_host(const torch::Tensor& values);

// How many read_to_host calls this process has made (all threads).
std::int64_t host_read_count();

}  // namespace lmkit
