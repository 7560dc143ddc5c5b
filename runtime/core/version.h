// What this build of lmkit is made of, for `lmkit --version`, run directories and bug reports.
#pragma once
#include <string>

namespace lmkit {

struct BuildInfo {
  std::string lmkit_version;   // e.g. "0.1.0"
  std::string git_revision;    // e.g. "15a83a7e2b1c-dirty" for a development build; empty otherwise
  std::string torch_version;   // e.g. "1.13.0"
  bool cuda_compiled = false;  // the Torch we link was built with CUDA
  bool cuda_usable = false;    // ...and a CUDA device answers now
  int cuda_device_count = 0;
};

BuildInfo build_info();

// One line per component, e.g. "lmkit 0.1.0 (git 15a83a7e2b1c)\nTorch 1.13.0 (CUDA: not compiled in)".
std::string describe_build(const BuildInfo& info, const std::string& lua_version);

}  // namespace lmkit
