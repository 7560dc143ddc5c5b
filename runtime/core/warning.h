// Warnings: one sink for every "this worked, but you should know" message of the runtime (a fused
// kernel that failed its self-check, ...). By default they go to stderr as "lmkit: warning: …";
// the front end or a test may take them instead.
#pragma once
#include <functional>
#include <string>

namespace lmkit {

using WarningHandler = std::function<void(const std::string& message)>;

// Sends `message` to the current handler (thread-safe).
void warn(const std::string& message);

// Installs `handler` (an empty one restores stderr) and returns the one it replaces.
WarningHandler set_warning_handler(WarningHandler handler);

// Routes Torch's own warnings (TORCH_WARN: e.g. cuDNN's "RNN module weights are not part of single
// contiguous chunk of memory", which LibTorch prints on every call, unlike Python's warnings
// module) through warn() above, each distinct text once per process: "Torch: <text> (shown once;
// later repeats are not printed)". Torch's handler is per thread: call it on each thread that runs
// Torch work (the executable's main thread and the Lua module's opener do); autograd's worker
// threads hand their warnings back to the thread that called backward. Idempotent per thread.
void route_torch_warnings();

// How many Torch warnings this process has seen and how many distinct texts among them (tests).
struct TorchWarningCounts {
  long long seen = 0, distinct = 0;
};
TorchWarningCounts torch_warning_counts();

}  // namespace lmkit
