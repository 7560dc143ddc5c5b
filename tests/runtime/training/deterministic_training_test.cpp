// set_deterministic: what it asks of Torch (here, on any machine), that it leaves the process's
// environment alone (CUBLAS_WORKSPACE_CONFIG comes from the process's start: LMKIT_DETERMINISTIC,
// tested from the command line in tests/CMakeLists.txt), and what it is for (on a GPU): two training
// runs from one seed, with dropout and lmkit's fused kernels, give the same metrics bit for bit —
// one test per head, so that a crash names its head. The CUDA tests skip themselves where no device
// is usable (CTest label gpu; CTest gives them CUBLAS_WORKSPACE_CONFIG). No test here edits the
// environment: CUDA's, Torch's and cuBLAS's threads read it.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "runtime/core/warning.h"

#include "runtime/core/determinism.h"
#include "runtime/training/trainer.h"
#include "tests/support/comparable_metrics.h"
#include "tests/support/fused_kernel_heads.h"
#include "tests/support/small_training.h"
#include "tests/support/temporary_folder.h"

namespace lmkit::training {
namespace {

std::optional<std::string> environment_value(const char* name) {
  const char* value = std::getenv(name);
  return value == nullptr ? std::nullopt : std::optional<std::string>(value);
}

// Restores Torch's flags, so that no other test in the process runs deterministic.
class DeterminismTest : public testing::TemporaryFolderTest {
 protected:
  DeterminismTest() : TemporaryFolderTest("lmkit_determinism_test_") {}
  ~DeterminismTest() override {
    set_deterministic(false);
    if (torch::cuda::is_available()) std::fprintf(stderr, "[ milestone ] deterministic mode off\n");
  }
};

TEST_F(DeterminismTest, AsksTorchForDeterministicKernelsAndLeavesTheEnvironmentAlone) {
  const auto workspace = environment_value("CUBLAS_WORKSPACE_CONFIG");
  std::vector<std::string> warnings;
  const auto previous = set_warning_handler([&](const std::string& m) { warnings.push_back(m); });
  set_deterministic(true);
  set_warning_handler(previous);
  EXPECT_TRUE(deterministic());
  EXPECT_TRUE(at::globalContext().deterministicCuDNN());
  EXPECT_FALSE(at::globalContext().benchmarkCuDNN());
  EXPECT_EQ(environment_value("CUBLAS_WORKSPACE_CONFIG"), workspace);
  if (!at::globalContext().hasCUDA() || workspace) {
    EXPECT_TRUE(warnings.empty()) << warnings.front();  // nothing cuBLAS could miss
  } else {
    ASSERT_EQ(warnings.size(), 1u);
    EXPECT_NE(warnings[0].find("LMKIT_DETERMINISTIC=1"), std::string::npos) << warnings[0];
  }
  set_deterministic(false);
  EXPECT_FALSE(deterministic());
  EXPECT_FALSE(at::globalContext().deterministicCuDNN());
  EXPECT_EQ(environment_value("CUBLAS_WORKSPACE_CONFIG"), workspace);
}

using testing::small_corpus;
using testing::small_model;
using testing::comparable_metrics;

// Two runs from one seed — dropout masks from the device's generator, the embedding's and the
// LSTM's backward, the head's fused kernel — and every logged loss, norm and perplexity is equal.
// Milestones on stderr (unbuffered): on a GPU this test once died with SIGSEGV after its runs had
// printed their last line, and a milestone log says which part of its end it reached.
void expect_two_runs_from_one_seed_agree(const nlohmann::json& head, const torch::Device& device,
                                         const std::function<std::string(const std::string&)>& dir) {
  set_deterministic(true);
  TrainOptions options;
  options.lr = 5;
  options.batch_size = 4;
  options.bptt = 10;
  options.epochs = 2;
  options.log_interval = 10;
  options.seed = 11;
  const auto milestone = [](const std::string& what) { std::fprintf(stderr, "[ milestone ] %s\n", what.c_str()); };
  std::vector<std::vector<nlohmann::json>> runs;
  for (const char* name : {"a", "b"}) {
    {
      auto model = small_model(head);
      model->to(device);
      Trainer trainer(model, small_corpus(), options, dir(head.at("kind").get<std::string>() + name));
      trainer.run();
      milestone(std::string("run ") + name + " trained");
      runs.push_back(comparable_metrics(trainer.store().metrics()));
    }
    if (device.is_cuda()) torch::cuda::synchronize();
    milestone(std::string("run ") + name + "'s trainer and model destroyed");
  }
  ASSERT_FALSE(runs[0].empty());
  EXPECT_EQ(runs[0], runs[1]) << head.dump();
  milestone("metrics compared");
}

// The GPU test's body on the CPU, where the sanitizer suite runs it: the whole of a run's end —
// the best checkpoint saved and reloaded, the final evaluations, two trainers in one process in
// deterministic mode — with every heap access checked (a use after free at a run's end would show
// here, where the GPU only showed a crash at exit).
TEST_F(DeterminismTest, TwoCpuRunsFromOneSeedGiveTheSameMetricsBitForBit) {
  expect_two_runs_from_one_seed_agree({{"kind", "softmax"}}, torch::kCPU, [this](const std::string& name) { return dir(name); });
}

class CudaDeterminismTest : public DeterminismTest, public ::testing::WithParamInterface<nlohmann::json> {};

TEST_P(CudaDeterminismTest, TwoRunsFromOneSeedGiveTheSameMetricsBitForBit) {
  if (!torch::cuda::is_available()) GTEST_SKIP() << "no CUDA device";
  expect_two_runs_from_one_seed_agree(GetParam(), torch::kCUDA, [this](const std::string& name) { return dir(name); });
}

INSTANTIATE_TEST_SUITE_P(EveryFusedKernel, CudaDeterminismTest, testing::every_fused_kernel_head(), testing::head_kind_name);

}  // namespace
}  // namespace lmkit::training
