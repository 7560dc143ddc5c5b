// set_deterministic: what it asks of Torch (here, on any machine), and what it is for (on a GPU):
// two training runs from one seed, with dropout and lmkit's fused kernels, give the same metrics
// bit for bit. The CUDA test skips itself where no device is usable (CTest label gpu).
#include <gtest/gtest.h>

#include <cstdlib>
#include <optional>
#include <string>
#include <vector>

#include "runtime/core/determinism.h"
#include "runtime/training/trainer.h"
#include "tests/support/comparable_metrics.h"
#include "tests/support/small_training.h"
#include "tests/support/temporary_folder.h"

namespace lmkit::training {
namespace {

// Restores Torch's flags and CUBLAS_WORKSPACE_CONFIG, so that no other test runs deterministic.
class DeterminismTest : public testing::TemporaryFolderTest {
 protected:
  DeterminismTest() : TemporaryFolderTest("lmkit_determinism_test_") {
    if (const char* v = std::getenv("CUBLAS_WORKSPACE_CONFIG")) workspace_ = v;
  }
  ~DeterminismTest() override {
    set_deterministic(false);
    if (workspace_) {
      setenv("CUBLAS_WORKSPACE_CONFIG", workspace_->c_str(), 1);
    } else {
      unsetenv("CUBLAS_WORKSPACE_CONFIG");
    }
  }
  std::optional<std::string> workspace_;
};

TEST_F(DeterminismTest, AsksTorchAndCublasForDeterministicKernels) {
  unsetenv("CUBLAS_WORKSPACE_CONFIG");
  set_deterministic(true);
  EXPECT_TRUE(deterministic());
  EXPECT_TRUE(at::globalContext().deterministicCuDNN());
  EXPECT_FALSE(at::globalContext().benchmarkCuDNN());
  ASSERT_NE(std::getenv("CUBLAS_WORKSPACE_CONFIG"), nullptr);
  EXPECT_EQ(std::string(std::getenv("CUBLAS_WORKSPACE_CONFIG")), ":4096:8");
  set_deterministic(false);
  EXPECT_FALSE(deterministic());
  EXPECT_FALSE(at::globalContext().deterministicCuDNN());
}

TEST_F(DeterminismTest, KeepsTheUsersOwnCublasWorkspace) {
  setenv("CUBLAS_WORKSPACE_CONFIG", ":16:8", 1);
  set_deterministic(true);
  EXPECT_EQ(std::string(std::getenv("CUBLAS_WORKSPACE_CONFIG")), ":16:8");
}

using testing::small_corpus;
using testing::small_model;
using testing::comparable_metrics;

// Two runs on the GPU from one seed — dropout masks from the CUDA generator, the embedding's and
// the LSTM's backward, each fused kernel — and every logged loss, norm and perplexity is equal.
TEST_F(DeterminismTest, TwoCudaRunsFromOneSeedGiveTheSameMetricsBitForBit) {
  if (!torch::cuda::is_available()) GTEST_SKIP() << "no CUDA device";
  set_deterministic(true);
  TrainOptions options;
  options.lr = 5;
  options.batch_size = 4;
  options.bptt = 10;
  options.epochs = 2;
  options.log_interval = 10;
  options.seed = 11;
  for (const auto& head : {nlohmann::json{{"kind", "softmax"}}, nlohmann::json{{"kind", "gss"}, {"c", 1.0}, {"k", 1.5}},
                           nlohmann::json{{"kind", "plif"}, {"K", 2000}}, nlohmann::json{{"kind", "mos"}, {"K", 3}}}) {
    std::vector<std::vector<nlohmann::json>> runs;
    for (const char* name : {"a", "b"}) {
      auto model = small_model(head);
      model->to(torch::kCUDA);
      Trainer trainer(model, small_corpus(), options, dir(head.at("kind").get<std::string>() + name));
      trainer.run();
      runs.push_back(comparable_metrics(trainer.store().metrics()));
    }
    ASSERT_FALSE(runs[0].empty());
    EXPECT_EQ(runs[0], runs[1]) << head.dump();
  }
}

}  // namespace
}  // namespace lmkit::training
