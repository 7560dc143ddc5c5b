// Torch's own warnings reach the user through lmkit's warning sink, each distinct text once per
// process: LibTorch prints cuDNN's "RNN module weights are not part of single contiguous chunk of
// memory" on every LSTM call (Python's warnings module would show it once), which floods a run.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "runtime/core/torch.h"
#include "runtime/core/warning.h"

namespace lmkit {
namespace {

TEST(TorchWarningsTest, EachDistinctTextReachesLmkitsWarningsOnce) {
  std::vector<std::string> shown;
  const auto previous = set_warning_handler([&](const std::string& m) { shown.push_back(m); });
  route_torch_warnings();
  route_torch_warnings();  // idempotent
  const auto before = torch_warning_counts();
  for (int i = 0; i < 5; ++i) TORCH_WARN("lmkit test: a warning Torch repeats on every call");
  TORCH_WARN("lmkit test: another text");
  TORCH_WARN("lmkit test: a warning Torch repeats on every call");
  set_warning_handler(previous);
  const auto after = torch_warning_counts();
  auto count = [&](const std::string& text) {
    return std::count_if(shown.begin(), shown.end(), [&](const std::string& m) { return m.find(text) != std::string::npos; });
  };
  EXPECT_EQ(count("a warning Torch repeats on every call"), 1);
  EXPECT_EQ(count("another text"), 1);
  ASSERT_EQ(shown.size(), 2u);
  EXPECT_EQ(shown[0].rfind("Torch: lmkit test: a warning Torch repeats on every call", 0), 0u) << shown[0];
  EXPECT_NE(shown[0].find("shown once"), std::string::npos) << shown[0];
  EXPECT_EQ(after.seen - before.seen, 7);
  EXPECT_EQ(after.distinct - before.distinct, 2);
}

}  // namespace
}  // namespace lmkit
