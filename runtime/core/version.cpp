#include "runtime/core/version.h"

#include "runtime/core/number_text.h"
#include "runtime/core/torch.h"

#include <torch/version.h>

#include "lmkit_git_revision.h"
#include "lmkit_version_config.h"

namespace lmkit {

BuildInfo build_info() {
  BuildInfo info;
  info.lmkit_version = LMKIT_VERSION;
  info.git_revision = LMKIT_GIT_REVISION;
  info.torch_version = TORCH_VERSION;
#ifdef LMKIT_WITH_CUDA
  info.cuda_compiled = true;
#endif
  info.cuda_usable = torch::cuda::is_available();
  info.cuda_device_count = info.cuda_usable ? static_cast<int>(torch::cuda::device_count()) : 0;
  return info;
}

std::string describe_build(const BuildInfo& info, const std::string& lua_version) {
  std::string cuda;
  if (info.cuda_usable) {
    cuda = "usable, " + integer_text(info.cuda_device_count) + " device(s)";
  } else if (info.cuda_compiled) {
    cuda = "compiled in, no usable device";
  } else {
    cuda = "not compiled in";
  }
  const std::string revision = info.git_revision.empty() ? "" : " (git " + info.git_revision + ")";
  return "lmkit " + info.lmkit_version + revision + "\n" + lua_version + "\nTorch " + info.torch_version +
         " (CUDA: " + cuda + ")";
}

VersionTable version_table(const std::string& lua_release) {
  const auto info = build_info();
  return {info.lmkit_version, info.git_revision, info.torch_version, lua_release, info.cuda_compiled, info.cuda_usable};
}

}  // namespace lmkit
