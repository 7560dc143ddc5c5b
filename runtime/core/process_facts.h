// Facts about this process and its machine, and small process utilities: what a batch records of
// its tasks, what a run records of its writer, and the waits a script may do.
#pragma once
#include <string>

namespace lmkit {

// Whether a process with this id exists on this machine.
bool process_alive(int pid);
int current_pid();
std::string host_name();
// The running executable (/proc/self/exe), so that tasks run the same lmkit as the batch.
std::string executable_path();
// Waits; UsageError for a negative or NaN time.
void sleep_seconds(double seconds);
// `path` made absolute against the working directory (not resolved: links stay as given).
std::string absolute_path(const std::string& path);

}  // namespace lmkit
