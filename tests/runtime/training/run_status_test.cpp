// `lmkit status` of a training run directory: the way to continue a resumable run is a command that
// really continues it, with the model given again when its head was written in Lua.
#include "runtime/training/run_status.h"

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

}  // namespace
}  // namespace lmkit::training
