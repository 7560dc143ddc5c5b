// What this build of lmkit is made of, for `lmkit --version`, run directories and bug reports.
#pragma once
#include <string>

#include "runtime/config/declared_result.h"

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

// The build as a script sees it (lmkit.version()): the components' versions, the Lua one given.
struct VersionTable {
  std::string lmkit, git, torch, lua;
  bool cuda_compiled = false, cuda_usable = false;
};
inline auto declared_result(config::Tag<VersionTable>) {
  using config::result_field;
  return config::result_table(result_field("lmkit", &VersionTable::lmkit, "lmkit's version"),
                              result_field("git", &VersionTable::git, "the source revision of a development build, \"\" otherwise"),
                              result_field("torch", &VersionTable::torch, "the version of the Torch linked"),
                              result_field("lua", &VersionTable::lua, "Lua's release"),
                              result_field("cuda_compiled", &VersionTable::cuda_compiled, "Torch was built with CUDA"),
                              result_field("cuda_usable", &VersionTable::cuda_usable, "a CUDA device answers now"));
}
VersionTable version_table(const std::string& lua_release);

}  // namespace lmkit
