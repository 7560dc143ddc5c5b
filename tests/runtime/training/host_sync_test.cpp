// Host synchronisations on the training hot path, counted. On a GPU every value read back to the
// host (.item(), a copy to the CPU) waits for all queued work. A training step reads nothing: the
// clipping coefficient and the finiteness of loss and norm stay on the device (which gates the
// update), and the step's numbers come back a step late through a deferred copy; the steps that
// write an interval line read nothing more. An evaluation reads once, at its end. Counted two
// ways: lmkit's own reads (read_to_host) and, independently, every read back Torch's dispatcher
// sees (aten::_local_scalar_dense, what .item() runs, and the ops whose output size depends on
// values: nonzero, masked_select, unique, ...), through a RecordFunction observer.
#include <gtest/gtest.h>

#include <unistd.h>

#include <atomic>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include <ATen/record_function.h>

#include "runtime/core/device.h"
#include "runtime/core/host_read.h"
#include "runtime/data/synthetic_language.h"
#include "runtime/training/evaluation.h"
#include "runtime/training/trainer.h"
#include "tests/support/small_training.h"
#include "tests/support/temporary_folder.h"

namespace lmkit::training {
namespace {

namespace fs = std::filesystem;

std::atomic<std::int64_t> scalar_reads{0};

// Counts, on every thread while alive, the ops that read values back to the host on a GPU:
// .item() (aten::_local_scalar_dense) and those whose output size depends on the values.
class ScalarReadObserver {
 public:
  ScalarReadObserver() {
    handle_ = at::addGlobalCallback(
        at::RecordFunctionCallback([](const at::RecordFunction& fn) -> std::unique_ptr<at::ObserverContext> {
          for (const char* op : {"aten::_local_scalar_dense", "aten::nonzero", "aten::masked_select", "aten::unique",
                                 "aten::_unique2", "aten::unique_consecutive", "aten::is_nonzero", "aten::equal"}) {
            if (std::strcmp(fn.name(), op) == 0) ++scalar_reads;
          }
          return nullptr;
        }).scopes({at::RecordScope::FUNCTION}));
  }
  ~ScalarReadObserver() { at::removeCallback(handle_); }

 private:
  at::CallbackHandle handle_;
};

using testing::small_corpus;
using testing::small_model;

class HostSyncTest : public testing::TemporaryFolderTest {
 protected:
  HostSyncTest() : TemporaryFolderTest("lmkit_host_sync_test_") {}
};

TEST_F(HostSyncTest, TheObserverSeesItem) {
  // The premise: if .item() stopped reaching the observer, the counts below would prove nothing.
  ScalarReadObserver observer;
  const auto before = scalar_reads.load();
  torch::ones({2}).sum().item<double>();
  EXPECT_EQ(scalar_reads.load() - before, 1);
}

TEST_F(HostSyncTest, ATrainingStepDoesNotReadTheHost) {
  // averaging: the second epoch with ASGD, its η, μ and count on the device (rehearsed graphs).
  const auto check = [&](const nlohmann::json& head, std::int64_t small_batch, bool averaging) {
    SCOPED_TRACE(head.dump() + " small_batch " + std::to_string(small_batch) + (averaging ? " averaging" : ""));
    TrainOptions options;
    options.lr = 5;
    options.batch_size = 4;
    options.small_batch_size = small_batch;
    options.bptt = 10;
    options.epochs = 2;
    options.log_interval = 5;  // the steps that print an interval line are counted too
    options.eval_batch_size = 4;
    options.test_batch_size = 2;
    options.clip = 0.1;        // and clipping acts
    options.seed = 11;
    if (averaging) {
      options.switch_policy = "et";
      options.switch_epoch = 1;
      options.cuda_graphs = "rehearse";
    }
    struct Mark {
      std::int64_t epoch, scalar_reads, host_reads;
    };
    std::vector<Mark> marks;
    TrainCallbacks callbacks;
    callbacks.on_step = [&](const nlohmann::json& info) {
      marks.push_back({info["epoch"].get<std::int64_t>(), scalar_reads.load(), host_read_count()});
    };
    ScalarReadObserver observer;
    const auto name = "run" + std::to_string(small_batch) + head["kind"].get<std::string>() + (averaging ? "asgd" : "");
    Trainer(small_model(head), small_corpus(), options, (root_ / name).string(), callbacks).run();
    ASSERT_GT(marks.size(), 40u);
    std::int64_t steps_compared = 0;
    for (std::size_t i = 1; i < marks.size(); ++i) {
      if (marks[i].epoch != marks[i - 1].epoch) continue;  // an epoch's end evaluates and saves between
      EXPECT_EQ(marks[i].scalar_reads - marks[i - 1].scalar_reads, 0) << "step " << i;
      EXPECT_EQ(marks[i].host_reads - marks[i - 1].host_reads, 0) << "step " << i;
      ++steps_compared;
    }
    EXPECT_GT(steps_compared, 30);
  };
  for (const auto& head : {nlohmann::json{{"kind", "softmax"}}, nlohmann::json{{"kind", "plif"}, {"K", 20}},
                           nlohmann::json{{"kind", "mos"}, {"K", 2}}}) {
    for (const std::int64_t small_batch : {0, 2}) check(head, small_batch, false);  // 2: the step in two chunks
  }
  check({{"kind", "softmax"}}, 0, true);
}

TEST_F(HostSyncTest, AnEvaluationReadsTheHostOnce) {
  auto model = small_model({{"kind", "gss"}, {"c", 0.0}, {"k", 2.0}});
  const auto tokens = small_corpus().valid;
  evaluate(model, tokens, 4, 10);  // the first use of the fused op checks it (outside the count)
  ScalarReadObserver observer;
  const auto scalars_before = scalar_reads.load();
  const auto reads_before = host_read_count();
  const auto result = evaluate(model, tokens, 4, 10);
  EXPECT_TRUE(std::isfinite(result.loss));
  EXPECT_EQ(host_read_count() - reads_before, 1);
  // check_token_ids reads the stream's flag once, on the host (the tokens are CPU tensors).
  EXPECT_EQ(scalar_reads.load() - scalars_before, 1);
}

}  // namespace
}  // namespace lmkit::training
