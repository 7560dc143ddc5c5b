#include "runtime/batch/process_pool.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <filesystem>
#include <chrono>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "runtime/core/error.h"

namespace lmkit::training {
namespace {

namespace fs = std::filesystem;

PoolOptions at_most(std::size_t jobs) {
  PoolOptions options;
  options.jobs = jobs;
  return options;
}

class ProcessPoolTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("lmkit-pool-" + std::to_string(::getpid()) + "-" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  ProcessSpec shell(const std::string& script, const std::string& log_name) const {
    return ProcessSpec{{"/bin/sh", "-c", script}, (dir_ / log_name).string(), {}};
  }
  std::string read(const std::string& name) const {
    std::ifstream in(dir_ / name);
    std::stringstream text;
    text << in.rdbuf();
    return text.str();
  }
  fs::path dir_;
};

TEST_F(ProcessPoolTest, ReportsExitCodesSignalsAndAppendsOutputToEachLog) {
  std::ofstream(dir_ / "b.log") << "earlier attempt\n";
  const std::vector<ProcessSpec> specs = {shell("echo out; echo err >&2; exit 0", "a.log"),
                                          shell("echo second; exit 3", "b.log"),
                                          shell("kill -KILL $$", "c.log")};
  std::vector<ProcessEvent> events;
  const auto result = run_process_pool(specs, at_most(2), [&](const ProcessEvent& e) { events.push_back(e); });
  ASSERT_EQ(result.exits.size(), 3u);
  EXPECT_EQ(result.forwarded_signal, 0);
  EXPECT_EQ(result.not_started, 0u);
  std::map<std::size_t, ProcessEvent> by_index;
  for (const auto& e : result.exits) by_index[e.index] = e;
  EXPECT_EQ(by_index[0].exit_code, 0);
  EXPECT_EQ(by_index[1].exit_code, 3);
  EXPECT_EQ(by_index[2].exit_code, -1);
  EXPECT_EQ(by_index[2].signal, SIGKILL);
  EXPECT_EQ(read("a.log"), "out\nerr\n");
  EXPECT_EQ(read("b.log"), "earlier attempt\nsecond\n");
  EXPECT_EQ(events.size(), 6u);  // a start and an exit each
}

TEST_F(ProcessPoolTest, NeverRunsMoreThanJobsAtOnce) {
  // Each task appends "+" when it starts and "-" when it ends to one shared file; with 2 jobs the
  // running count read off the file never exceeds 2.
  const std::string shared = (dir_ / "trace").string();
  std::vector<ProcessSpec> specs;
  for (int i = 0; i < 6; ++i) specs.push_back(shell("echo + >>" + shared + "; sleep 0.2; echo - >>" + shared, "t.log"));
  std::size_t most_running = 0, running = 0;
  run_process_pool(specs, at_most(2), [&](const ProcessEvent& e) {
    running += e.kind == ProcessEvent::Kind::started ? 1 : 0;
    running -= e.kind == ProcessEvent::Kind::exited ? 1 : 0;
    most_running = std::max(most_running, running);
  });
  EXPECT_EQ(most_running, 2u);
  int level = 0, peak = 0;
  for (char c : read("trace")) {
    if (c == '+') peak = std::max(peak, ++level);
    if (c == '-') --level;
  }
  EXPECT_EQ(peak, 2);
}

TEST_F(ProcessPoolTest, EachSlotGivesItsChildrenItsEnvironment) {
  PoolOptions options;
  options.slot_environment = {{{"SLOT_NAME", "gpu0"}}, {{"SLOT_NAME", "gpu1"}}};
  std::vector<ProcessSpec> specs;
  for (int i = 0; i < 4; ++i) {
    auto spec = shell("echo $SLOT_NAME $TASK_VAR; sleep 0.1", "task" + std::to_string(i) + ".log");
    spec.environment = {{"TASK_VAR", "t" + std::to_string(i)}};
    specs.push_back(spec);
  }
  const auto result = run_process_pool(specs, options, [](const ProcessEvent&) {});
  for (const auto& e : result.exits) {
    const std::string expected = "gpu" + std::to_string(e.slot) + " t" + std::to_string(e.index) + "\n";
    EXPECT_EQ(read("task" + std::to_string(e.index) + ".log"), expected);
  }
}

TEST_F(ProcessPoolTest, ForwardsSigtermToTheRunningTasksAndStartsNoMore) {
  // The tasks trap TERM and say so; the pool's owner is sent SIGTERM once both are running.
  std::vector<ProcessSpec> specs;
  for (int i = 0; i < 3; ++i) {
    specs.push_back(shell("trap 'echo got TERM; exit 75' TERM; echo started; sleep 30 & wait", "s" + std::to_string(i) + ".log"));
  }
  int started = 0;
  const auto result = run_process_pool(specs, at_most(2), [&](const ProcessEvent& e) {
    if (e.kind == ProcessEvent::Kind::started && ++started == 2) {
      // Give the shells time to install their traps, then signal ourselves as a cluster would.
      for (int i = 0; i < 50 && (read("s0.log").empty() || read("s1.log").empty()); ++i) ::usleep(100000);
      ::kill(::getpid(), SIGTERM);
    }
  });
  EXPECT_EQ(result.forwarded_signal, SIGTERM);
  EXPECT_EQ(result.not_started, 1u);
  ASSERT_EQ(result.exits.size(), 2u);
  for (const auto& e : result.exits) EXPECT_EQ(e.exit_code, 75);
  EXPECT_EQ(read("s0.log"), "started\ngot TERM\n");
}

TEST_F(ProcessPoolTest, AMissingProgramOrLogFolderIsAnErrorNamingIt) {
  const std::vector<ProcessSpec> missing_program = {{{"/no/such/program"}, (dir_ / "x.log").string(), {}}};
  EXPECT_THROW(
      {
        try {
          run_process_pool(missing_program, at_most(1), [](const ProcessEvent&) {});
        } catch (const EnvironmentError& e) {
          EXPECT_NE(std::string(e.what()).find("/no/such/program"), std::string::npos);
          throw;
        }
      },
      EnvironmentError);
  const std::vector<ProcessSpec> missing_folder = {shell("true", "no/such/folder/x.log")};
  EXPECT_THROW(run_process_pool(missing_folder, at_most(1), [](const ProcessEvent&) {}), EnvironmentError);
}

TEST_F(ProcessPoolTest, AnExceptionFromTheCallbackStopsTheChildrenAndPropagates) {
  const std::vector<ProcessSpec> specs = {shell("sleep 30", "a.log"), shell("sleep 30", "b.log")};
  const auto start = std::chrono::steady_clock::now();
  EXPECT_THROW(run_process_pool(specs, at_most(2),
                                [](const ProcessEvent& e) {
                                  if (e.index == 1) throw UsageError("callback failed");
                                }),
               UsageError);
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(), 20.0);
}

TEST(ProcessFacts, PathsAndLiveness) {
  EXPECT_TRUE(process_alive(current_pid()));
  EXPECT_FALSE(process_alive(0));
  EXPECT_EQ(executable_path().front(), '/');
  EXPECT_EQ(absolute_path("/a/b"), "/a/b");
  EXPECT_EQ(absolute_path("./x/y"), fs::current_path().string() + "/x/y");
  EXPECT_FALSE(host_name().empty());
}

}  // namespace
}  // namespace lmkit::training
