// `lmkit doctor [--device cuda]`: what a user runs first on a new machine and attaches to a bug
// report — versions, build facts, each fused kernel's self-check, a short training run on the
// device against the CPU, and a verdict table. Exit status 0 only when every check passed.
#pragma once
#include <cstdint>
#include <string>

namespace lmkit::repl {

struct DoctorOptions {
  std::string device;        // empty: cuda when usable, else cpu
  std::int64_t steps = 20;   // of the training smoke test
};

int run_doctor(const DoctorOptions& options);

}  // namespace lmkit::repl
