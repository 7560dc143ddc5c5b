// `lmkit compare`'s reading of run folders: handmade runs (config.json, metrics.jsonl, summary.json
// as the trainer writes them) and a recipe's folder, the settings that differ, and the errors.
#include "runtime/runs/run_comparison.h"

#include <gtest/gtest.h>

#include <fstream>

#include "runtime/core/error.h"
#include "tests/support/failure_text.h"
#include "tests/support/temporary_folder.h"

namespace lmkit::training {
namespace {

using nlohmann::json;
using testing::contains;
using testing::failure;

class RunComparisonTest : public lmkit::testing::TemporaryFolderTest {
 protected:
  RunComparisonTest() : TemporaryFolderTest("lmkit_compare_", true) {}

  static void write(const std::filesystem::path& path, const std::string& text) {
    std::filesystem::create_directories(path.parent_path());
    std::ofstream(path) << text;
  }

  // A finished run of `head` at learning rate `lr`: valid ppl per epoch, then finetune epochs.
  void make_run(const std::filesystem::path& dir, const std::string& head, double lr, const std::vector<double>& valid,
                const std::vector<double>& finetune = {}) {
    const json config = {
        {"run_id", dir.filename().string() + "-id"},
        {"model", {{"emb", 24}, {"nhid", 96}, {"head", {{"kind", head}}}}},
        {"corpus", {{"name", "synthetic"}, {"source", dir.string()}, {"hash", {{"train", "0123456789abcdef"}, {"valid", "1111111111111111"}, {"test", "2222222222222222"}}}}},
        {"train", {{"lr", lr}, {"epochs", static_cast<int>(valid.size())}, {"finetune_epochs", static_cast<int>(finetune.size())},
                   {"run_dir", dir.string()}}}};
    write(dir / "config.json", config.dump());
    std::string metrics = R"({"type": "step", "step": 1, "loss": 5.0})" "\n";
    for (std::size_t e = 0; e < valid.size(); ++e) {
      metrics += json{{"type", "epoch"}, {"epoch", e + 1}, {"valid_ppl", valid[e]}, {"epoch_seconds", 2.0}}.dump() + "\n";
    }
    for (std::size_t e = 0; e < finetune.size(); ++e) {
      metrics += json{{"type", "epoch"}, {"stage", "finetune"}, {"epoch", e + 1}, {"valid_ppl", finetune[e]}}.dump() + "\n";
    }
    write(dir / "metrics.jsonl", metrics);
    write(dir / "summary.json", json{{"status", "finished"}, {"test_ppl", 60.5}, {"train_ppl", 44.25}}.dump());
  }
};

TEST_F(RunComparisonTest, RunsSideBySideWithTheSettingsThatDiffer) {
  make_run(root_ / "softmax", "softmax", 20, {90, 80, 85}, {79});
  make_run(root_ / "mos", "mos", 20, {88, 70, 71});
  make_run(root_ / "mos-lr30", "mos", 30, {95, 75, 72});
  const auto c = compare_runs({dir("softmax"), dir("mos"), dir("mos-lr30")});
  ASSERT_EQ(c.runs.size(), 3u);
  // The run's id, folder and the corpus's source differ in every run and are no setting.
  EXPECT_EQ(c.differing, (std::vector<std::string>{"model.head.kind", "train.finetune_epochs", "train.lr"}));
  const auto& softmax = c.runs[0];
  EXPECT_EQ(softmax.label, dir("softmax"));
  // The finetune epoch comes after the main three: epoch 4 of 4, the best one.
  EXPECT_EQ(softmax.status.valid_curve,
            (std::vector<std::pair<std::int64_t, double>>{{1, 90}, {2, 80}, {3, 85}, {4, 79}}));
  EXPECT_EQ(*softmax.status.last_valid_ppl, 79);
  EXPECT_EQ(*softmax.status.best_valid_ppl, 79);
  EXPECT_EQ(softmax.status.best_epoch, 4);
  EXPECT_EQ(softmax.status.epoch, 4);
  EXPECT_EQ(softmax.status.epochs, 4);
  EXPECT_EQ(*c.runs[1].status.best_valid_ppl, 70);
  EXPECT_EQ(c.runs[1].status.best_epoch, 2);
  EXPECT_EQ(*c.runs[1].status.train_ppl, 44.25);
  EXPECT_EQ(c.runs[1].settings.at("corpus.content"), "01234567/11111111/22222222");

  const auto lines = comparison_lines(c, 0);
  std::string text;
  for (const auto& line : lines) text += line + "\n";
  EXPECT_TRUE(contains(text, "3 runs compared")) << text;
  EXPECT_TRUE(contains(text, "best valid ppl")) << text;
  EXPECT_TRUE(contains(text, "70.00")) << text;
  EXPECT_TRUE(contains(text, "Settings that differ (3 of config.json's")) << text;
  EXPECT_TRUE(contains(text, "model.head.kind  train.finetune_epochs  train.lr")) << text;
  // Narrow: each setting in a table of its own, the run's label (cut to 30 columns) starting each.
  const auto narrow = comparison_lines(c, 60);
  std::size_t headers = 0;
  for (const auto& line : narrow) headers += line.rfind("   run", 0) == 0 ? 1 : 0;
  EXPECT_EQ(headers, 4u);  // the runs' table and one per setting
}

TEST_F(RunComparisonTest, ARecipeFolderContributesItsCellsRunsInGridOrder) {
  write(root_ / "grid" / "recipe.json", R"({"name": "gss_grid", "settings": {}, "cells": ["c=1_k=2", "c=0_k=3", "c=2_k=2"]})");
  make_run(root_ / "grid" / "cells" / "c=1_k=2" / "run", "gss", 20, {80, 75});
  make_run(root_ / "grid" / "cells" / "c=0_k=3" / "run", "gss", 20, {82, 76});
  write(root_ / "grid" / "cells" / "c=2_k=2" / "result.json", "{}");  // no run: an analysis-only cell
  // Given with a trailing slash and once more by one of its cells: each run once, labelled plainly.
  const auto c = compare_runs({dir("grid") + "/", dir("grid") + "/cells/c=0_k=3/run"});
  ASSERT_EQ(c.runs.size(), 2u);
  EXPECT_EQ(c.runs[0].label, dir("grid") + "/c=1_k=2");
  EXPECT_EQ(c.runs[1].label, dir("grid") + "/c=0_k=3");
  EXPECT_TRUE(c.differing.empty());
  ASSERT_EQ(c.notes.size(), 2u);
  EXPECT_TRUE(contains(c.notes[0], "1 of its 3 cells have no training run yet")) << c.notes[0];
  EXPECT_TRUE(contains(c.notes[1], "given twice, shown once")) << c.notes[1];
}

TEST_F(RunComparisonTest, ADamagedRunIsARowOfItsOwnAndFileTextIsShownNotObeyed) {
  make_run(root_ / "good", "softmax", 20, {90, 80});
  make_run(root_ / "bad", "softmax", 20, {90, 80});
  write(root_ / "bad" / "summary.json", R"({"status": "finis)");
  make_run(root_ / "odd", "softmax\n\x1b]0;title\x07", 20, {90, 80});
  // A metrics file that never ends (a link to /dev/zero) is refused, not read.
  make_run(root_ / "endless", "softmax", 20, {90, 80});
  std::filesystem::remove(root_ / "endless" / "metrics.jsonl");
  std::filesystem::create_symlink("/dev/zero", root_ / "endless" / "metrics.jsonl");
  const auto c = compare_runs({dir("good"), dir("bad"), dir("odd"), dir("endless")});
  ASSERT_EQ(c.runs.size(), 4u);
  EXPECT_TRUE(contains(c.runs[3].unreadable, "it is not a regular file")) << c.runs[3].unreadable;
  EXPECT_TRUE(c.runs[0].unreadable.empty());
  EXPECT_EQ(c.runs[1].status.state, "unreadable");
  EXPECT_TRUE(contains(c.runs[1].unreadable, "summary.json")) << c.runs[1].unreadable;
  EXPECT_EQ(c.differing, (std::vector<std::string>{"model.head.kind"}));  // among the readable two
  std::string text;
  for (const auto& line : comparison_lines(c, 0)) text += line + "\n";
  EXPECT_TRUE(contains(text, dir("bad") + " is unreadable: ")) << text;
  EXPECT_TRUE(contains(text, "softmax??]0;title?")) << text;
  EXPECT_FALSE(contains(text, "\x1b")) << text;
}

TEST_F(RunComparisonTest, FoldersThatHoldNoRunAreNamedWithAWayOut) {
  EXPECT_TRUE(contains(failure([&] { compare_runs({dir("missing")}); }), "'" + dir("missing") + "' does not exist"));
  write(root_ / "file.txt", "x");
  EXPECT_TRUE(contains(failure([&] { compare_runs({dir("file.txt")}); }), "is a file; give run directories"));
  std::filesystem::create_directories(root_ / "empty");
  EXPECT_TRUE(contains(failure([&] { compare_runs({dir("empty")}); }), "holds no training run: give a run directory (config.json"));
  write(root_ / "analysis" / "recipe.json", R"({"name": "known_rank", "settings": {}, "cells": ["a"]})");
  EXPECT_TRUE(contains(failure([&] { compare_runs({dir("analysis")}); }), "whose cells trained no model"));
  write(root_ / "hostile" / "recipe.json", R"({"name": "x", "settings": {}, "cells": ["../../etc"]})");
  EXPECT_TRUE(contains(failure([&] { compare_runs({dir("hostile")}); }), "'cells'[1] has no cell id that names a folder under cells/"));
  write(root_ / "newline" / "recipe.json", R"json({"name": "x", "settings": {}, "cells": ["a\nsystem(\"touch x\")"]})json");
  EXPECT_TRUE(contains(failure([&] { compare_runs({dir("newline")}); }), "'cells'[1] has no cell id that names a folder under cells/"));
  std::filesystem::create_directories(root_ / "loop");
  std::filesystem::create_symlink("config.json", root_ / "loop" / "config.json");
  EXPECT_TRUE(contains(failure([&] { compare_runs({dir("loop")}); }), "cannot be examined: Too many levels of symbolic links"));
  EXPECT_TRUE(contains(failure([&] { compare_runs({}); }), "give at least one run directory"));
}

}  // namespace
}  // namespace lmkit::training
