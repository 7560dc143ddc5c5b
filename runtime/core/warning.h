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

}  // namespace lmkit
