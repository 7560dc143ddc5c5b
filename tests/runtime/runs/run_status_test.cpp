// `lmkit status` of a training run directory: the way to continue a resumable run is a command that
// really continues it, with the model given again when its head was written in Lua.
#include "runtime/runs/run_status.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include <nlohmann/json.hpp>

#include "tests/support/temporary_folder.h"

namespace lmkit::training {
namespace {

class RunStatusTest : public testing::TemporaryFolderTest {
 protected:
  RunStatusTest() : TemporaryFolderTest("lmkit_run_status_", /*create=*/true) {}

  // A run directory left by a killed process: config.json and state.ckpt, no summary.json.
  std::string stopped_run(const std::string& name, const nlohmann::json& head) {
    const auto run = dir(name);
    std::filesystem::create_directories(run);
    std::ofstream(run + "/config.json") << nlohmann::json{{"model", {{"head", head}}}, {"train", {{"epochs", 3}}}}.dump();
    std::ofstream(run + "/state.ckpt") << "state";
    return run;
  }

  static std::string joined(const RunStatus& status) {
    std::string text;
    for (const auto& line : status.lines()) text += line + "\n";
    return text;
  }
};

TEST_F(RunStatusTest, AResumableRunNamesTheCommandThatContinuesIt) {
  const auto run = stopped_run("builtin", {{"kind", "mos"}, {"K", 2}});
  const auto status = run_status(run);
  EXPECT_EQ(status.state, "stopped");
  EXPECT_TRUE(status.resumable);
  EXPECT_TRUE(status.lua_head.empty());
  const auto text = joined(status);
  EXPECT_NE(text.find("  lmkit resume " + run + " (or lmkit.resume(\"" + run + "\") in Lua) continues it from its state.ckpt"),
            std::string::npos)
      << text;
}

TEST_F(RunStatusTest, ARunWithAHeadWrittenInLuaNamesTheCallWithTheModelGivenAgain) {
  const auto run = stopped_run("lua_head", {{"kind", "custom"}, {"name", "extra bias"}});
  const auto status = run_status(run);
  EXPECT_EQ(status.lua_head, "custom 'extra bias'");
  const auto text = joined(status);
  EXPECT_NE(text.find("  lmkit.resume(\"" + run + "\", {model = m}) continues it from its state.ckpt, m built as for the "
                      "run with its head written in Lua (custom 'extra bias')"),
            std::string::npos)
      << text;
  // The shell command would be refused for it (config.json cannot rebuild the head): not offered.
  EXPECT_EQ(text.find("lmkit resume "), std::string::npos) << text;
  EXPECT_EQ(run_status(stopped_run("pointwise", {{"kind", "pointwise"}})).lua_head, "pointwise");
}

// A finished run of two epochs, its records written by itself (run id "run-a"), and `metrics` as
// the text of its metrics.jsonl.
std::string epoch_record(int epoch, double valid_ppl, const std::string& run_id = "run-a") {
  return nlohmann::json{{"type", "epoch"}, {"stage", "train"}, {"epoch", epoch}, {"valid_ppl", valid_ppl},
                        {"epoch_seconds", 1.5}, {"run_id", run_id}}
             .dump() +
         "\n";
}

class RunRecordsTest : public RunStatusTest {
 protected:
  std::string finished_run(const std::string& name, const std::string& metrics) {
    const auto run = dir(name);
    std::filesystem::create_directories(run);
    std::ofstream(run + "/config.json")
        << nlohmann::json{{"run_id", "run-a"}, {"model", {{"head", {{"kind", "softmax"}}}}}, {"train", {{"epochs", 2}}}}.dump();
    std::ofstream(run + "/summary.json")
        << nlohmann::json{{"status", "finished"}, {"epochs", 2}, {"finetune_epochs", 0}, {"test_ppl", 90.5}}.dump();
    std::ofstream(run + "/metrics.jsonl", std::ios::binary) << metrics;
    return run;
  }
  // The problem said for `metrics`, after checking that no epoch number is shown as the run's.
  std::string problem_of(const std::string& name, const std::string& metrics) {
    const auto status = run_status(finished_run(name, metrics));
    EXPECT_FALSE(status.best_valid_ppl.has_value()) << name;
    EXPECT_TRUE(status.valid_curve.empty()) << name;
    EXPECT_TRUE(status.failed()) << name;
    EXPECT_FALSE(status.done()) << name;
    EXPECT_EQ(status.test_ppl, 90.5) << name << ": summary.json's own numbers stay";
    EXPECT_NE(joined(status).find("its metrics.jsonl is not this run's record: " + status.records_problem), std::string::npos)
        << joined(status);
    return status.records_problem;
  }
};

TEST_F(RunRecordsTest, TheRunsOwnRecordsGiveItsNumbers) {
  const auto status = run_status(finished_run("own", epoch_record(1, 120.0) + epoch_record(2, 110.0)));
  EXPECT_TRUE(status.records_problem.empty()) << status.records_problem;
  EXPECT_TRUE(status.done());
  EXPECT_EQ(status.best_valid_ppl, 110.0);
  EXPECT_EQ(status.epoch, 2);
  EXPECT_EQ(status.valid_curve.size(), 2u);
}

TEST_F(RunRecordsTest, RecordsThatAreNotTheRunsAreSaidInsteadOfShown) {
  const auto good = epoch_record(1, 120.0) + epoch_record(2, 110.0);
  EXPECT_NE(problem_of("copied", epoch_record(1, 120.0, "run-b") + epoch_record(2, 110.0, "run-b"))
                .find("line 1 belongs to another run (run id run-b; this run's, in config.json, is run-a): it was copied in from elsewhere"),
            std::string::npos);
  EXPECT_NE(problem_of("cut", good.substr(0, good.size() - 20)).find("its last line is cut, though the run finished"),
            std::string::npos);
  EXPECT_NE(problem_of("empty", "").find("it holds 0 epoch records, while summary.json says the run trained 2 epochs"),
            std::string::npos);
  EXPECT_NE(problem_of("appended", good + "\x01\x02garbage\n").find("line 3 is not JSON"), std::string::npos);
  EXPECT_NE(problem_of("doubled", good + epoch_record(2, 100.0)).find("it holds 3 epoch records, while summary.json says "
                                                                       "the run trained 2 epochs"),
            std::string::npos);
  EXPECT_NE(problem_of("long", good + std::string((std::size_t{1} << 20) + 10, 'x') + "\n")
                .find("line 3 is longer than 1 MiB"),
            std::string::npos);
}

// A run without a summary (killed, or still writing) may have its last line cut: that line is no
// record, the rest is the run's.
TEST_F(RunRecordsTest, ACutLastLineOfAnUnfinishedRunIsNoProblem) {
  const auto run = finished_run("killed", epoch_record(1, 120.0) + epoch_record(2, 110.0).substr(0, 30));
  std::filesystem::remove(run + "/summary.json");
  const auto status = run_status(run);
  EXPECT_TRUE(status.records_problem.empty()) << status.records_problem;
  EXPECT_EQ(status.best_valid_ppl, 120.0);
  EXPECT_EQ(status.epoch, 1);
}

}  // namespace
}  // namespace lmkit::training
