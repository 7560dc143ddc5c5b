// CUDA graphs of the training step (runtime/training/step_graphs.h). On any machine, "rehearse"
// replays each captured step by running its function again: a step that read the window or the
// carried state from anywhere but its graph's own buffers and the static state would then train on
// stale numbers, and the metrics would differ from the eager run's. A rehearsal runs the step's
// host code again, but with the host numbers a real graph bakes in held at their capture values —
// the rates, and the optimizer's step counts and ASGD's η and μ — so a step that read one of them
// where it changes between replays (ASGD's η, μ) differs too. On a GPU (CudaGraphTest, label gpu;
// skipped elsewhere) the replayed CUDA graphs give the eager steps' bits.
#include <gtest/gtest.h>

#include <csignal>
#include <cstdio>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <memory>
#include <string>
#include <vector>

#include "runtime/core/determinism.h"
#include "runtime/core/error.h"
#include "runtime/core/host_read.h"
#include "runtime/core/preemption.h"
#include "runtime/heads/head.h"
#include "runtime/models/language_model.h"
#include "runtime/training/step_graphs.h"
#include "runtime/training/trainer.h"
#include "tests/support/comparable_metrics.h"
#include "tests/support/fused_kernel_heads.h"
#include "tests/support/same_bits.h"
#include "tests/support/small_training.h"
#include "tests/support/temporary_folder.h"

namespace lmkit::training {
namespace {

using testing::comparable_metrics;
using testing::small_corpus;
using testing::small_model;

struct Trained {
  std::vector<nlohmann::json> metrics;
  nlohmann::json summary;
  std::vector<torch::Tensor> weights;
};

class StepGraphsTest : public testing::TemporaryFolderTest {
 protected:
  StepGraphsTest() : TemporaryFolderTest("lmkit_step_graphs_test_") {}

  // Variable windows (a graph per length), two chunks per batch, every dropout on; the switch to
  // ASGD after the second epoch (its steps graphs of their own, their η the previous window's rate).
  TrainOptions options(const std::string& graphs) const {
    TrainOptions o;
    o.lr = 5;
    o.batch_size = 4;
    o.small_batch_size = 2;
    o.bptt = 10;
    o.epochs = 3;
    o.switch_policy = "et";
    o.switch_epoch = 2;
    o.log_interval = 10;
    o.seed = 11;
    o.cuda_graphs = graphs;
    return o;
  }

  // on_step: called with the trainer and the step's record (a callback that steers the run).
  Trained train(const std::string& name, const nlohmann::json& head, const TrainOptions& o,
                const torch::Device& device = torch::kCPU,
                const std::function<void(Trainer&, const nlohmann::json&)>& on_step = nullptr) {
    auto model = small_model(head);
    model->to(device);
    Trainer* running = nullptr;
    TrainCallbacks callbacks;
    if (on_step) callbacks.on_step = [&](const nlohmann::json& record) { on_step(*running, record); };
    Trainer trainer(model, small_corpus(), o, dir(name), callbacks);
    running = &trainer;
    Trained out;
    out.summary = trainer.run();
    out.metrics = comparable_metrics(trainer.store().metrics());
    for (const auto& p : model->parameters()) out.weights.push_back(p.detach().to(torch::kCPU).clone());
    return out;
  }
};

void expect_same_bits(const Trained& a, const Trained& b) {
  ASSERT_FALSE(a.metrics.empty());
  EXPECT_EQ(a.metrics, b.metrics);
  ASSERT_EQ(a.weights.size(), b.weights.size());
  for (std::size_t i = 0; i < a.weights.size(); ++i) EXPECT_TRUE(testing::same_bits(a.weights[i], b.weights[i])) << i;
}

TEST_F(StepGraphsTest, RehearsedGraphStepsGiveTheEagerStepsBits) {
  const nlohmann::json head = {{"kind", "softmax"}};
  const auto eager = train("eager", head, options("off"));
  const auto rehearsed = train("rehearsed", head, options("rehearse"));
  expect_same_bits(eager, rehearsed);
  const auto& graphs = rehearsed.summary.at("cuda_graphs");
  // Random window lengths: several graphs, each replayed from its second use on.
  EXPECT_GE(graphs.at("captured").get<int>(), 3) << graphs.dump();
  EXPECT_GT(graphs.at("replayed").get<int>(), 3 * graphs.at("captured").get<int>()) << graphs.dump();
  EXPECT_FALSE(graphs.contains("eager_because")) << graphs.dump();
  EXPECT_FALSE(eager.summary.contains("cuda_graphs"));
  // The ASGD stage's steps were replayed too: more replays than the SGD stage had steps.
  int sgd_steps = -1;
  for (const auto& record : rehearsed.metrics) {
    if (record.value("type", "") == "epoch" && record.at("switched").get<bool>()) sgd_steps = record.at("step").get<int>();
  }
  ASSERT_GT(sgd_steps, 0) << "no switch to ASGD";
  EXPECT_GT(graphs.at("replayed").get<int>(), sgd_steps) << graphs.dump();
}

// Preempted while averaging, resumed (a new optimizer from the state file: its η, μ and counts back
// on the device from the host's copies, which the replays kept), then finetuned (ASGD's optimizer
// made anew again): the rehearsed run gives the eager run's bits.
TEST_F(StepGraphsTest, AnAveragingRunPreemptedResumedAndFinetunedRehearsesToTheEagerBits) {
  const nlohmann::json head = {{"kind", "softmax"}};
  auto o = options("off");
  o.finetune_epochs = 1;
  const auto eager = train("eager", head, o);
  std::int64_t sgd_steps = -1;
  for (const auto& record : eager.metrics) {
    if (record.value("type", "") == "epoch" && record.at("switched").get<bool>()) sgd_steps = record.at("step").get<std::int64_t>();
  }
  ASSERT_GT(sgd_steps, 0) << "no switch to ASGD";
  o.cuda_graphs = "rehearse";
  {
    TrainCallbacks callbacks;
    callbacks.on_step = [&](const nlohmann::json& info) {
      if (info.at("step").get<std::int64_t>() == sgd_steps + 20) std::raise(SIGTERM);
    };
    Trainer trainer(small_model(head), small_corpus(), o, dir("rehearsed"), callbacks);
    EXPECT_THROW(trainer.run(), Preempted);
  }
  auto model = small_model(head);
  Trainer resumed(model, small_corpus(), o, dir("rehearsed"));
  ASSERT_TRUE(resumed.resumed());
  Trained out;
  out.summary = resumed.run();
  out.metrics = comparable_metrics(resumed.store().metrics());
  for (const auto& p : model->parameters()) out.weights.push_back(p.detach().clone());
  expect_same_bits(eager, out);
  EXPECT_GT(out.summary.at("cuda_graphs").at("replayed").get<int>(), 0) << out.summary.dump();
}

TEST_F(StepGraphsTest, ARateChangedByACallbackReachesTheReplayedSteps) {
  // Every window of one length (one shape), and a new rate halfway: the graph captured with the
  // first rate must not be replayed with the second (the rate is part of a step's shape).
  auto o = options("off");
  o.epochs = 1;
  o.windows = "fixed";
  const auto halve_at_step_40 = [](Trainer& trainer, const nlohmann::json& record) {
    if (record.at("step").get<int>() == 40) trainer.set_lr(trainer.lr() / 2);
  };
  const auto eager = train("eager", {{"kind", "softmax"}}, o, torch::kCPU, halve_at_step_40);
  o.cuda_graphs = "rehearse";
  const auto rehearsed = train("rehearsed", {{"kind", "softmax"}}, o, torch::kCPU, halve_at_step_40);
  expect_same_bits(eager, rehearsed);
  // One graph per rate: each shape runs eagerly once, is captured at its second step and replayed
  // at every step after that. Eager: the first step (no gradients yet: a shape of its own), the
  // first step at each rate, and the epoch's last window (9 tokens, not 10, seen once).
  const auto& graphs = rehearsed.summary.at("cuda_graphs");
  const int steps = rehearsed.summary.at("steps").get<int>();
  EXPECT_EQ(graphs.at("captured").get<int>(), 2) << graphs.dump();
  EXPECT_EQ(steps, 100);
  EXPECT_EQ(graphs.at("replayed").get<int>(), steps - 4) << graphs.dump();
}

TEST_F(StepGraphsTest, AHeadWithItsOwnRateAndAFusedKernelRehearseToo) {
  // LMS-PLIF: a second parameter group (the slopes' rate) and a custom autograd op.
  const nlohmann::json head = {{"kind", "plif"}, {"K", 50}};
  auto o = options("off");
  o.epochs = 1;
  const auto eager = train("eager", head, o);
  o.cuda_graphs = "rehearse";
  const auto rehearsed = train("rehearsed", head, o);
  expect_same_bits(eager, rehearsed);
  EXPECT_GT(rehearsed.summary.at("cuda_graphs").at("replayed").get<int>(), 0);
}

TEST_F(StepGraphsTest, StepsThatCannotBeGraphsRunEagerlyAndSayWhy) {
  auto o = options("rehearse");
  o.epochs = 1;
  o.schedule = "cosine";
  const auto scheduled = train("scheduled", {{"kind", "softmax"}}, o);
  const auto& graphs = scheduled.summary.at("cuda_graphs");
  EXPECT_EQ(graphs.at("replayed").get<int>(), 0);
  EXPECT_NE(graphs.value("eager_because", "").find("schedule"), std::string::npos) << graphs.dump();
  // A constant schedule without a warm-up keeps the rate: its steps qualify.
  o.schedule = "constant";
  o.warmup = 0;
  const auto constant = train("constant", {{"kind", "softmax"}}, o);
  EXPECT_GT(constant.summary.at("cuda_graphs").at("replayed").get<int>(), 0) << constant.summary.dump();
  EXPECT_FALSE(constant.summary.at("cuda_graphs").contains("eager_because")) << constant.summary.dump();
}

TEST_F(StepGraphsTest, OnIsRefusedWhereNoGraphCanBeCaptured) {
  auto model = small_model({{"kind", "softmax"}});
  auto o = options("on");
  o.optimizer = "adam";
  try {
    Trainer trainer(model, small_corpus(), o, dir("on"));
    FAIL() << "cuda_graphs = \"on\" on the CPU was accepted";
  } catch (const UsageError& e) {
    // Every obstacle at once, and the ways out; the run directory untouched.
    const std::string text = e.what();
    EXPECT_NE(text.find("cuda_graphs = \"on\""), std::string::npos) << text;
    EXPECT_NE(text.find("CUDA device"), std::string::npos) << text;
    EXPECT_NE(text.find("the optimizer is adam"), std::string::npos) << text;
    EXPECT_NE(text.find("cuda_graphs = \"auto\""), std::string::npos) << text;
    EXPECT_NE(text.find("\"off\""), std::string::npos) << text;
    EXPECT_FALSE(std::filesystem::exists(dir("on") + "/config.json"));
  }
}

// A Softmax head that reads its largest logit back to the host in every loss, as a head with a
// data-dependent size would: a CUDA graph cannot hold the read, so every capture is refused.
// every_other: only at every second call — in a step of two chunks, the second chunk's, after the
// first chunk's backward wrote the carried state.
class HostReadingSoftmaxImpl : public HeadImpl {
 public:
  explicit HostReadingSoftmaxImpl(bool every_other = false) : every_other_(every_other) {}
  std::string kind() const override { return "test_host_reading_softmax"; }
  nlohmann::json config() const override { return {{"kind", kind()}}; }
  torch::Tensor log_probs(const torch::Tensor& h, const Decoder& decoder) override {
    const auto logits = decoder.logits(rows_of(h));
    if (!every_other_ || calls_++ % 2 == 1) largest = read_to_host(logits.detach().max()).at(0);
    return torch::log_softmax(logits, 1);
  }
  double largest = 0;

 private:
  bool every_other_;
  std::int64_t calls_ = 0;
};

LanguageModel host_reading_model(bool every_other = false) {
  return small_model({{"kind", "softmax"}}, make_head_of<HostReadingSoftmaxImpl>(every_other));
}

// With "auto" ("rehearse" on the CPU), a refused capture launches its step eagerly and the rest of
// the run too, with one line saying so: the same bits as the run without graphs. The rehearsal
// refuses the read where a capture would, before the step changed a weight, and takes back the
// dropout draws the step had made — as a refused capture on a GPU makes none.
TEST_F(StepGraphsTest, ARefusedCaptureLaunchesTheStepAndTheRestOfTheRunEagerly) {
  const auto run = [&](const std::string& name, const std::string& graphs) {
    auto model = host_reading_model();
    auto o = options(graphs);
    o.epochs = 2;
    o.switch_policy = "none";
    Trainer trainer(model, small_corpus(), o, dir(name));
    Trained out;
    out.summary = trainer.run();
    // The run's printed lines, as its log keeps them (printing itself is off under CTest).
    std::ifstream log(dir(name) + "/log.txt");
    const std::string printed((std::istreambuf_iterator<char>(log)), std::istreambuf_iterator<char>());
    out.metrics = comparable_metrics(trainer.store().metrics());
    for (const auto& p : model->parameters()) out.weights.push_back(p.detach().clone());
    return std::make_pair(out, printed);
  };
  const auto [eager, eager_printed] = run("eager", "off");
  const auto [rehearsed, printed] = run("rehearsed", "rehearse");
  expect_same_bits(eager, rehearsed);
  const auto& graphs = rehearsed.summary.at("cuda_graphs");
  EXPECT_EQ(graphs.at("captured").get<int>(), 0) << graphs.dump();
  EXPECT_EQ(graphs.at("replayed").get<int>(), 0) << graphs.dump();
  const auto because = graphs.value("eager_because", "");
  EXPECT_NE(because.find("a capture was refused"), std::string::npos) << because;
  EXPECT_NE(because.find("read_to_host"), std::string::npos) << because;
  // One line, naming the read and the way to skip the attempt.
  const std::string line = "warning: CUDA graphs off for the rest of this run";
  const auto at = printed.find(line);
  ASSERT_NE(at, std::string::npos) << printed;
  EXPECT_EQ(printed.find(line, at + 1), std::string::npos) << printed;
  EXPECT_NE(printed.find("read_to_host", at), std::string::npos) << printed;
  EXPECT_NE(printed.find("cuda_graphs = \"off\"", at), std::string::npos) << printed;
  EXPECT_EQ(eager_printed.find(line), std::string::npos) << eager_printed;
}

// A rehearsal takes back a refused step's draws, not its writes: a read after the step wrote its
// carried state (the second of two chunks) stops the run, saying so, rather than go on from a state
// a refused capture on a GPU would not have left.
TEST_F(StepGraphsTest, ARehearsalRefusesToGoOnFromAStepThatWroteBeforeItsRead) {
  auto model = host_reading_model(/*every_other=*/true);
  auto o = options("rehearse");
  ASSERT_EQ(o.batch_size / o.small_batch_size, 2);
  Trainer trainer(model, small_corpus(), o, dir("rehearsed"));
  try {
    trainer.run();
    FAIL() << "the rehearsal went on";
  } catch (const EnvironmentError& e) {
    const std::string text = e.what();
    EXPECT_NE(text.find("cannot take back"), std::string::npos) << text;
    EXPECT_NE(text.find("read_to_host"), std::string::npos) << text;
    EXPECT_NE(text.find("cuda_graphs = \"off\""), std::string::npos) << text;
  }
}

TEST(HostReadsRefusedTest, ReadsAreRefusedWhileOneIsAliveAndNamedByTheInnermost) {
  const auto values = torch::tensor({1.5, 2.5});
  EXPECT_EQ(read_to_host(values), (std::vector<double>{1.5, 2.5}));
  const auto reads = host_read_count();
  {
    HostReadsRefused outer("an outer capture");
    {
      HostReadsRefused inner("an inner capture");
      try {
        read_to_host(values);
        ADD_FAILURE() << "a read was not refused";
      } catch (const HostReadRefused& e) {
        EXPECT_NE(std::string(e.what()).find("an inner capture"), std::string::npos) << e.what();
      }
    }
    try {
      read_to_host(values);
      ADD_FAILURE() << "a read was not refused";
    } catch (const HostReadRefused& e) {
      EXPECT_NE(std::string(e.what()).find("an outer capture"), std::string::npos) << e.what();
    }
  }
  EXPECT_EQ(host_read_count(), reads);  // a refused read is no read
  EXPECT_EQ(read_to_host(values), (std::vector<double>{1.5, 2.5}));
  // Scopes ending out of order (two threads' captures): the one still alive refuses alone.
  auto first = std::make_unique<HostReadsRefused>("a first capture");
  auto second = std::make_unique<HostReadsRefused>("a second capture");
  first.reset();
  EXPECT_THROW(read_to_host(values), HostReadRefused);
  second.reset();
  EXPECT_EQ(read_to_host(values), (std::vector<double>{1.5, 2.5}));
  EXPECT_THROW(HostReadsRefused(""), std::logic_error);
}

// Graphs of an optimizer that was replaced (the switch to ASGD, finetuning) are released: no step
// replays them again, and their memory goes back.
TEST(StepGraphsServeTest, GraphsOfAnotherOptimizerAreReleased) {
  StepGraphs graphs("rehearse");
  graphs.serve(7);
  EXPECT_FALSE(graphs.seen_before("20x4"));
  int runs = 0;
  graphs.capture("20x4", torch::kCPU, [&runs] { ++runs; });
  graphs.replay("20x4");
  EXPECT_EQ(runs, 1);
  graphs.serve(7);  // the same optimizer: kept
  EXPECT_TRUE(graphs.holds_graphs());
  EXPECT_TRUE(graphs.captured("20x4"));
  graphs.serve(8);
  EXPECT_FALSE(graphs.holds_graphs());
  EXPECT_FALSE(graphs.captured("20x4"));
  EXPECT_FALSE(graphs.seen_before("20x4"));  // the next step of this shape runs eagerly first
  EXPECT_EQ(graphs.captures(), 1);           // the counts are the run's
  EXPECT_EQ(graphs.replays(), 1);
}

// On a GPU: the same runs with CUDA graphs captured and replayed give the eager run's bits.
class CudaGraphTest : public StepGraphsTest, public ::testing::WithParamInterface<nlohmann::json> {};

TEST_P(CudaGraphTest, ReplayedStepsGiveTheEagerStepsBits) {
  if (!torch::cuda::is_available()) GTEST_SKIP() << "no CUDA device";
  set_deterministic(true);
  const auto head = GetParam();
  const auto eager = train("eager", head, options("off"), torch::kCUDA);
  // The verdict is printed and flushed as soon as it is known, before any teardown: a crash at
  // exit (or in a later case) cannot hide it from a GPU node's log.
  const auto verdict = [&head](const std::string& text) {
    std::printf("cuda graphs verdict [%s]: %s\n", head.value("kind", "?").c_str(), text.c_str());
    std::fflush(stdout);
  };
  Trained graphed;
  try {
    graphed = train("graphed", head, options("on"), torch::kCUDA);
  } catch (const std::exception& e) {
    verdict(std::string("no capture: ") + e.what());
    set_deterministic(false);
    throw;
  }
  set_deterministic(false);
  {
    bool same = eager.metrics == graphed.metrics && eager.weights.size() == graphed.weights.size();
    for (std::size_t i = 0; same && i < eager.weights.size(); ++i) same = testing::same_bits(eager.weights[i], graphed.weights[i]);
    const auto& counts = graphed.summary.value("cuda_graphs", nlohmann::json::object());
    verdict(std::string("eager vs graphed ") + (same ? "same bits" : "DIFFER") + ", captured " +
            counts.value("captured", nlohmann::json(0)).dump() + ", replayed " + counts.value("replayed", nlohmann::json(0)).dump() +
            (counts.contains("eager_because") ? ", eager because " + counts.at("eager_because").dump() : std::string()));
  }
  expect_same_bits(eager, graphed);
  const auto& graphs = graphed.summary.at("cuda_graphs");
  EXPECT_GE(graphs.at("captured").get<int>(), 3) << graphs.dump();
  EXPECT_GT(graphs.at("replayed").get<int>(), 0) << graphs.dump();
}

INSTANTIATE_TEST_SUITE_P(EveryFusedKernel, CudaGraphTest, testing::every_fused_kernel_head(), testing::head_kind_name);

}  // namespace
}  // namespace lmkit::training
