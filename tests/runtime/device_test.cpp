#include "runtime/core/device.h"

#include <gtest/gtest.h>

#include "runtime/core/error.h"
#include "runtime/core/version.h"

#include <torch/version.h>

namespace lmkit {
namespace {

TEST(DeviceTest, CpuParsesAndUnknownNamesAreRejected) {
  EXPECT_TRUE(parse_device("cpu").is_cpu());
  try {
    parse_device("gpu");
    FAIL();
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("unknown device 'gpu'"), std::string::npos);
  }
}

TEST(DeviceTest, CudaWithoutADeviceSaysWhy) {
  if (torch::cuda::is_available()) GTEST_SKIP() << "CUDA is usable here";
  EXPECT_EQ(default_device_name(), "cpu");
  try {
    parse_device("cuda");
    FAIL();
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("not usable here"), std::string::npos);
  }
}

TEST(DeviceTest, SeedMakesDrawsReproducible) {
  seed_torch(141);
  const auto a = torch::randn({5});
  seed_torch(141);
  const auto b = torch::randn({5});
  seed_torch(142);
  const auto c = torch::randn({5});
  EXPECT_TRUE(torch::equal(a, b));
  EXPECT_FALSE(torch::equal(a, c));
}

TEST(DeviceTest, ThreadsAreSetAndValidated) {
  // n cores: OpenBLAS gets them, Torch's pool one thread unless told otherwise
  set_threads(2);
  EXPECT_EQ(get_threads(), 1);
  if (get_blas_threads() != 0) {
    EXPECT_EQ(get_blas_threads(), 2);
  }
  set_threads(2, /*torch_threads=*/2, /*blas_threads=*/1);
  EXPECT_EQ(get_threads(), 2);
  if (get_blas_threads() != 0) {
    EXPECT_EQ(get_blas_threads(), 1);
  }
  set_threads(1);
  EXPECT_THROW(set_threads(0), UsageError);
  EXPECT_THROW(set_threads(kMaxThreads + 1), UsageError);
  EXPECT_THROW(set_threads(1, -1), UsageError);
  EXPECT_THROW(set_threads(1, 0, kMaxThreads + 1), UsageError);
}

TEST(DeviceTest, BuildInfoDescribesItself) {
  const auto info = build_info();
  EXPECT_FALSE(info.lmkit_version.empty());
  EXPECT_EQ(info.torch_version.rfind(std::to_string(TORCH_VERSION_MAJOR) + ".", 0), 0u);
  const auto text = describe_build(info, "Lua 5.4.4");
  const std::string revision = info.git_revision.empty() ? "" : " (git " + info.git_revision + ")";
  EXPECT_NE(text.find("lmkit " + info.lmkit_version + revision + "\nLua 5.4.4\nTorch "), std::string::npos);
  // a development build names its revision; a build outside git (a tarball, a package) names none
  auto plain = info;
  plain.git_revision = "";
  EXPECT_EQ(describe_build(plain, "Lua 5.4.4").rfind("lmkit " + info.lmkit_version + "\n", 0), 0u);
  plain.git_revision = "0123456789ab-dirty";
  EXPECT_EQ(describe_build(plain, "Lua 5.4.4").rfind("lmkit " + info.lmkit_version + " (git 0123456789ab-dirty)\n", 0), 0u);
}

}  // namespace
}  // namespace lmkit
