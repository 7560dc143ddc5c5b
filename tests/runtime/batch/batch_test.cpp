// The batch's decisions without processes or a cluster: its declared options and their checks, the
// manifest, each task's state from the folder and the queue, the GPU slots, Slurm's --array syntax
// and job script. (The whole, through `lmkit batch`: tests/cli/batch_local.sh and batch_slurm.sh.)
#include <gtest/gtest.h>

#include <fstream>

#include "runtime/core/error.h"
#include "runtime/batch/batch_local.h"
#include "runtime/batch/batch_manifest.h"
#include "runtime/batch/batch_options.h"
#include "runtime/batch/batch_plan.h"
#include "runtime/batch/batch_slurm.h"
#include "runtime/batch/batch_task_state.h"
#include "tests/support/failure_text.h"
#include "tests/support/temporary_folder.h"

namespace lmkit::training {
namespace {

using lmkit::testing::contains;
using lmkit::testing::failure;
using nlohmann::json;

BatchOptions options_of(const json& given) { return declared_options(config::Tag<BatchOptions>{}).from_json(given); }

std::string refusal(const json& given) {
  return failure([&] { check_batch_options(options_of(given)); });
}

TEST(BatchOptionsTest, DeclaredOnceWithDefaultsAndChecksEachKey) {
  const auto o = options_of({{"recipe", "r.lua"}});
  EXPECT_EQ(o.backend, "local");
  EXPECT_EQ(o.signal_lead, 120);
  EXPECT_FALSE(o.jobs.has_value());
  EXPECT_TRUE(o.given.count("recipe"));
  EXPECT_FALSE(o.given.count("signal_lead"));
  EXPECT_TRUE(contains(failure([] { options_of({{"recipe", "r.lua"}, {"jbos", 2}}); }), "did you mean 'jobs'"));
  EXPECT_TRUE(contains(failure([] { options_of({{"recipe", "r.lua"}, {"jobs", 0}}); }), "option 'jobs' must be in [1, 100000], got 0"));
  // Counts past any machine: refused, not an out-of-memory error after making that many slots.
  EXPECT_TRUE(contains(failure([] { options_of({{"recipe", "r.lua"}, {"jobs", 99999999999}}); }),
                       "option 'jobs' must be in [1, 100000], got 99999999999"));
  EXPECT_TRUE(contains(failure([] { options_of({{"recipe", "r.lua"}, {"tasks_per_gpu", 100000}}); }), "option 'tasks_per_gpu' must be in [1, 256]"));
  EXPECT_TRUE(contains(failure([] { options_of({{"recipe", "r.lua"}, {"gpus", 4097}}); }), "option 'gpus' must be in [0, 256]"));
  EXPECT_EQ(options_of({{"recipe", "r.lua"}, {"jobs", 100000}}).jobs, 100000);
  EXPECT_TRUE(contains(failure([] { options_of({{"recipe", "r.lua"}, {"backend", "pbs"}}); }), "must be one of"));
  EXPECT_TRUE(contains(failure([] { options_of(json::object()); }), "option 'recipe' is required"));
}

TEST(BatchOptionsTest, OptionsThatDoNotGoTogetherAreRefusedSayingWhy) {
  EXPECT_EQ(refusal({{"recipe", "r"}, {"jobs", 2}}), "(no error)");
  EXPECT_EQ(refusal({{"recipe", "r"}, {"backend", "slurm"}, {"partition", "gpu"}, {"wait", true}, {"wait_timeout", 5}}),
            "(no error)");
  EXPECT_TRUE(contains(refusal({{"recipe", "r"}, {"partition", "gpu"}}), "--partition is the Slurm backend's"));
  EXPECT_TRUE(contains(refusal({{"recipe", "r"}, {"signal_lead", 120}}), "--signal-lead is the Slurm backend's"));
  EXPECT_TRUE(contains(refusal({{"recipe", "r"}, {"backend", "slurm"}, {"tasks_per_gpu", 2}}),
                       "--tasks-per-gpu is the local backend's"));
  EXPECT_TRUE(contains(refusal({{"recipe", "r"}, {"backend", "slurm"}, {"threads", 2}}), "--cpus-per-task"));
  EXPECT_TRUE(contains(refusal({{"recipe", "r"}, {"jobs", 2}, {"tasks_per_gpu", 2}}), "not both"));
  EXPECT_TRUE(contains(refusal({{"recipe", "r"}, {"gpus", 0}, {"tasks_per_gpu", 2}}), "sees no CUDA device"));
  EXPECT_TRUE(contains(refusal({{"recipe", "r"}, {"backend", "slurm"}, {"wait_timeout", 5}}), "needs --wait"));
  EXPECT_TRUE(contains(refusal({{"recipe", "r"}, {"sets", {"task=2"}}}), "is the batch's own"));
  EXPECT_TRUE(contains(refusal({{"recipe", "r"}, {"sets", {"report_only=true"}}}), "is the batch's own"));
  EXPECT_TRUE(contains(refusal({{"recipe", "r"}, {"sets", {"dry_run=true"}}}), "lmkit batch --dry-run"));
  EXPECT_TRUE(contains(refusal({{"recipe", "r"}, {"sets", {"scale"}}}), "--set scale: expected key=value"));
  EXPECT_TRUE(contains(refusal({{"recipe", "r"}, {"sets", {"=5"}}}), "malformed key"));
  EXPECT_TRUE(contains(refusal({{"recipe", "r"}, {"sets", {" dry_run=true"}}}), "lmkit batch --dry-run"))
      << "the key as the recipe reads it, spaces trimmed";
  EXPECT_TRUE(contains(refusal({{"recipe", "r"}, {"sets", {"out=a", "out=b"}}}), "out= is given twice"));
  EXPECT_TRUE(contains(refusal({{"recipe", "r"}, {"sets", {"out= "}}}), "out= is empty"));
  EXPECT_TRUE(contains(refusal({{"recipe", "r"}, {"backend", "slurm"}, {"partition", "gpu\necho x"}}), "holds a line break"));
  EXPECT_TRUE(contains(refusal({{"recipe", "r"}, {"backend", "slurm"}, {"sbatch_args", {"--mem=1G\nrm"}}}),
                       "--sbatch-arg '--mem=1G"));
  EXPECT_TRUE(contains(refusal({{"recipe", "r"}, {"backend", "slurm"}, {"time", ""}}), "--time is empty"));
  EXPECT_TRUE(contains(refusal({{"recipe", "r"}, {"sbatch_args", {"--mem=1G"}}}), "--sbatch-arg is the Slurm backend's"));
  EXPECT_TRUE(contains(failure([] { options_of({{"recipe", "r"}, {"threads", 2000}}); }), "option 'threads' must be in"));
}

TEST(BatchSlurmTest, IndexRangesWriteSlurmsArraySyntax) {
  EXPECT_EQ(index_ranges({1, 2, 3, 5, 7, 8, 9}), "1-3,5,7-9");
  EXPECT_EQ(index_ranges({9, 1, 8, 2, 7}), "1-2,7-9");
  EXPECT_EQ(index_ranges({4}), "4");
  EXPECT_EQ(index_ranges({2, 4, 6}), "2,4,6");
}

std::vector<std::string> gpus_of(const json& given, const std::optional<std::string>& visible) {
  json with_recipe = given;
  with_recipe["recipe"] = "r";
  std::vector<std::string> list;
  for (const auto& slot : gpu_slots(options_of(with_recipe), visible)) list.push_back(slot.at("CUDA_VISIBLE_DEVICES"));
  return list;
}

TEST(BatchLocalTest, ATasksGpuIsAnEntryOfThisProcesssVisibleDevicesGoingRoundThem) {
  using V = std::vector<std::string>;
  EXPECT_EQ(gpus_of({{"gpus", 2}, {"tasks_per_gpu", 2}}, std::nullopt), (V{"0", "1", "0", "1"}));
  EXPECT_EQ(gpus_of({{"gpus", 2}, {"tasks_per_gpu", 2}}, "3,5"), (V{"3", "5", "3", "5"}));
  EXPECT_EQ(gpus_of({{"gpus", 1}, {"tasks_per_gpu", 3}}, "GPU-8f2e"), (V{"GPU-8f2e", "GPU-8f2e", "GPU-8f2e"}));
  EXPECT_EQ(gpus_of({{"gpus", 3}}, "MIG-a, MIG-b,MIG-c"), (V{"MIG-a", "MIG-b", "MIG-c"}));
  EXPECT_TRUE(gpus_of({{"gpus", 1}}, "2").empty()) << "one GPU, one task at a time: nothing to choose";
  EXPECT_TRUE(gpus_of({{"gpus", 4}, {"jobs", 2}}, std::nullopt).empty()) << "--jobs alone: the tasks see what this process sees";
}

class BatchFolderTest : public lmkit::testing::TemporaryFolderTest {
 protected:
  BatchFolderTest() : TemporaryFolderTest("lmkit_batch_", true) {}
  void SetUp() override {
    TemporaryFolderTest::SetUp();
    out_ = root_.string();
    grid_.path = "/recipes/grid.lua";
    grid_.name = "grid";
    grid_.out = out_;
    grid_.cells = {"x=1", "x=2", "x=3"};
  }
  void write(const std::string& path, const std::string& text) {
    std::filesystem::create_directories(std::filesystem::path(path).parent_path());
    std::ofstream(path) << text;
  }
  BatchManifest manifest() {
    auto m = reconcile_batch_manifest(grid_, out_, {"scale=tiny"}, "local");
    write_batch_manifest(m);
    return read_batch_manifest(out_);
  }
  TaskState state_of(const BatchManifest& m, std::int64_t task, const TaskFacts& facts) {
    return task_views(m, facts).at(static_cast<std::size_t>(task - 1)).state;
  }
  TaskFacts here(std::function<bool(std::int64_t)> alive = [](std::int64_t) { return true; }) {
    TaskFacts facts;
    facts.host = "this-host";
    facts.alive = std::move(alive);
    return facts;
  }
  std::string out_;
  BatchGrid grid_;
};

TEST_F(BatchFolderTest, TheManifestRoundTripsAndIsTheFoldersOwn) {
  const auto m = manifest();
  EXPECT_EQ(m.recipe, "/recipes/grid.lua");
  EXPECT_EQ(m.cells, grid_.cells);
  EXPECT_EQ(m.sets, std::vector<std::string>{"scale=tiny"});
  EXPECT_EQ(m.out, out_);
  std::ifstream file(BatchPaths(out_).record);
  const std::string text((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
  EXPECT_FALSE(contains(text, out_)) << "a moved folder must not point back at its old place";
  EXPECT_EQ(task_arguments(m, 2, 4), (std::vector<std::string>{"run", "/recipes/grid.lua", "--threads", "4", "--set",
                                                                "scale=tiny", "--set", "out=" + out_, "--set", "task=2"}));
}

TEST_F(BatchFolderTest, AnotherRecipeOrOtherSettingsInTheFolderAreRefusedNamingBoth) {
  manifest();
  const auto other = failure([&] { reconcile_batch_manifest(grid_, out_, {"scale=paper"}, "local"); });
  EXPECT_TRUE(contains(other, "already holds a batch of /recipes/grid.lua with scale=tiny")) << other;
  EXPECT_TRUE(contains(other, "this one is /recipes/grid.lua with scale=paper")) << other;
  EXPECT_EQ(failure([&] { reconcile_batch_manifest(grid_, out_, {"scale=tiny"}, "slurm"); }), "(no error)");
  auto changed = grid_;
  changed.cells[1] = "x=9";
  const auto cells = failure([&] { reconcile_batch_manifest(changed, out_, {"scale=tiny"}, "local"); });
  EXPECT_TRUE(contains(cells, "whose cells differ from the grid's now (3 there, 3 now; task 2 is x=2 there, x=9 now)")) << cells;
}

TEST_F(BatchFolderTest, OneRecordForARunAndABatchEachContinuingTheOthersFolder) {
  grid_.settings = R"({"scale": "tiny", "epochs": 2})";
  // A folder begun by `lmkit run` (its record, no batch), continued by `lmkit batch`.
  record_recipe_run(out_, "/recipes/grid.lua", "grid", "", grid_.settings, "{}", grid_.cells, false);
  EXPECT_FALSE(read_recipe_record(out_).batch);
  auto m = reconcile_batch_manifest(grid_, out_, {"scale=tiny", "epochs=2"}, "slurm");
  write_batch_manifest(m);
  auto record = read_recipe_record(out_);
  ASSERT_TRUE(record.batch);
  EXPECT_EQ(record.batch->backend, "slurm");
  EXPECT_EQ(record.settings, nlohmann::json::parse(grid_.settings));
  EXPECT_EQ(record.sets, (std::vector<std::string>{"scale=tiny", "epochs=2"}));
  // The settings decide, not how they were spelt on the command line.
  EXPECT_EQ(failure([&] { reconcile_batch_manifest(grid_, out_, {"epochs=2.0", "scale=tiny"}, "local"); }), "(no error)");
  auto other = grid_;
  other.settings = R"({"scale": "tiny", "epochs": 3})";
  const auto refused = failure([&] { reconcile_batch_manifest(other, out_, {"epochs=3"}, "local"); });
  EXPECT_TRUE(contains(refused, "already holds a batch of /recipes/grid.lua (3 tasks) (its settings: epochs = 2 there, 3 now)"))
      << refused;
  // A setting the recipe declared since counts at its default; one it no longer declares is not compared.
  auto newer = grid_;
  newer.settings = R"({"scale": "tiny", "epochs": 2, "seeds": 1})";
  newer.defaults = R"({"scale": "tiny", "epochs": 1, "seeds": 1})";
  EXPECT_EQ(failure([&] { reconcile_batch_manifest(newer, out_, {"epochs=2"}, "local"); }), "(no error)");
  newer.settings = R"({"scale": "tiny", "epochs": 2, "seeds": 3})";
  EXPECT_TRUE(contains(failure([&] { reconcile_batch_manifest(newer, out_, {"epochs=2"}, "local"); }), "seeds = 1 there, 3 now"));
  auto fewer = grid_;
  fewer.settings = R"({"epochs": 2})";
  EXPECT_EQ(failure([&] { reconcile_batch_manifest(fewer, out_, {"epochs=2"}, "local"); }), "(no error)");
  // ... and `lmkit run` goes on in the batch's folder with the batch's cells and settings, leaving its
  // record (and submissions) as they are; a task run by hand writes no record over it; another grid
  // or other settings would run the batch's tasks otherwise.
  const std::string defaults = R"({"scale": "tiny", "epochs": 1})";
  record_recipe_run(out_, "/recipes/grid.lua", "grid", "", grid_.settings, defaults, grid_.cells, false);
  record = read_recipe_record(out_);
  ASSERT_TRUE(record.batch);
  EXPECT_EQ(record.batch->backend, "slurm");
  record_recipe_run(out_, "/recipes/other.lua", "other", "", "{}", "{}", {"y=1"}, true);
  EXPECT_EQ(read_recipe_record(out_).recipe, "/recipes/grid.lua");
  const auto renumbered =
      failure([&] { record_recipe_run(out_, "/recipes/grid.lua", "grid", "", grid_.settings, defaults, {"x=1"}, false); });
  EXPECT_TRUE(contains(renumbered, "holds a batch of /recipes/grid.lua whose cells differ from this run's (3 there, 1 now)"))
      << renumbered;
  const auto resettled = failure(
      [&] { record_recipe_run(out_, "/recipes/grid.lua", "grid", "", R"({"scale": "tiny", "epochs": 5})", defaults, grid_.cells, false); });
  EXPECT_TRUE(contains(resettled, "holds a batch of /recipes/grid.lua with other settings (epochs = 2 there, 5 now)")) << resettled;
  // A task run by hand in a folder without a record writes one.
  record_recipe_run(dir("hand"), "/recipes/grid.lua", "grid", "", grid_.settings, defaults, grid_.cells, true);
  EXPECT_EQ(read_recipe_record(dir("hand")).cells, grid_.cells);
  // A folder copied elsewhere is the copy's: no path in the record points back.
  const auto copy = root_ / "copy";
  std::filesystem::create_directories(copy);
  std::filesystem::copy_file(out_ + "/recipe.json", copy / "recipe.json");
  EXPECT_EQ(read_batch_manifest(copy.string()).out, copy.string());
  EXPECT_EQ(task_arguments(read_batch_manifest(copy.string()), 1, std::nullopt).at(7), "out=" + copy.string());
}

TEST_F(BatchFolderTest, AnOlderBatchsManifestIsReadAndMovesIntoTheRecord) {
  write(out_ + "/batch/manifest.json",
        R"({"format": 1, "recipe": "/recipes/grid.lua", "name": "grid", "sets": ["scale=tiny"], "backend": "slurm",
            "tasks": [{"task": 1, "id": "x=1"}, {"task": 2, "id": "x=2"}, {"task": 3, "id": "x=3"}],
            "slurm_jobs": [{"job": "77", "tasks": [1, 2, 3], "array": "1-3"}]})");
  // An older whole run's recipe.json beside it: its settings are not the batch's.
  write(out_ + "/recipe.json", R"({"recipe": "/recipes/grid.lua", "settings": {"scale": "paper"}, "cells": ["x=1", "x=2", "x=3"]})");
  auto m = read_batch_manifest(out_);
  EXPECT_EQ(m.cells, grid_.cells);
  EXPECT_EQ(m.slurm_jobs.at(0).job, "77");
  EXPECT_FALSE(m.settings);
  // Its --set settings stand for its settings; the next write keeps one record, recipe.json.
  m = reconcile_batch_manifest(grid_, out_, {"scale=tiny"}, "local");
  write_batch_manifest(m);
  EXPECT_FALSE(std::filesystem::exists(out_ + "/batch/manifest.json"));
  EXPECT_EQ(read_batch_manifest(out_).slurm_jobs.at(0).job, "77");
  // A damaged leftover manifest beside a record with its batch is not looked at.
  write(out_ + "/batch/manifest.json", "{oops");
  EXPECT_EQ(read_batch_manifest(out_).cells, grid_.cells);
}

TEST_F(BatchFolderTest, ADamagedOrEditedManifestIsNamedWithTheWayOut) {
  EXPECT_TRUE(contains(failure([&] { read_batch_manifest(out_); }), "is not a batch folder"));
  write(out_ + "/recipe.json", R"({"format": 2, "settings": {}, "cells": ["a"], "batch": {"backend": "cloud"}})");
  EXPECT_TRUE(contains(failure([&] { read_batch_manifest(out_); }), "recipe.json: 'backend' is \"cloud\", not \"local\" or \"slurm\""));
  write(out_ + "/recipe.json", R"({"format": 3, "settings": {}, "cells": ["a"]})");
  EXPECT_TRUE(contains(failure([&] { read_batch_manifest(out_); }), "'format' is 3: this lmkit reads format 2"));
  write(out_ + "/recipe.json", R"({"settings": {}, "cells": ["a"], "sets": ["out=/x"]})");
  EXPECT_TRUE(contains(failure([&] { read_batch_manifest(out_); }), "'sets'[1] sets 'out', which the batch sets itself"));
  std::filesystem::remove(out_ + "/recipe.json");
  // An older batch's manifest.
  write(out_ + "/batch/manifest.json", "{\"recipe\": ");
  EXPECT_TRUE(contains(failure([&] { read_batch_manifest(out_); }), "manifest.json: the batch manifest is damaged"));
  write(out_ + "/batch/manifest.json", R"({"recipe": "r.lua", "sets": [], "tasks": []})");
  EXPECT_TRUE(contains(failure([&] { read_batch_manifest(out_); }), "'tasks' is not a non-empty list"));
  write(out_ + "/batch/manifest.json", R"({"recipe": "r.lua", "sets": [], "tasks": [{"id": "../../etc"}]})");
  EXPECT_TRUE(contains(failure([&] { read_batch_manifest(out_); }), "'tasks'[1] has no cell id that names a folder"));
  write(out_ + "/batch/manifest.json", R"({"recipe": "r.lua", "sets": [" task=1"], "tasks": [{"id": "a"}]})");
  EXPECT_TRUE(contains(failure([&] { read_batch_manifest(out_); }), "'sets'[1] sets 'task', which the batch sets itself"));
  write(out_ + "/batch/manifest.json", R"({"format": 2, "recipe": "r.lua", "sets": [], "tasks": [{"id": "a"}]})");
  EXPECT_TRUE(contains(failure([&] { read_batch_manifest(out_); }), "'format' is 2"));
  write(out_ + "/batch/manifest.json", R"({"recipe": "r.lua", "sets": [], "tasks": [{"id": "a"}], "slurm_jobs": [{"tasks": 3}]})");
  EXPECT_TRUE(contains(failure([&] { read_batch_manifest(out_); }), "'slurm_jobs'[1] is not a submission"));
  EXPECT_TRUE(is_safe_cell_id("gss/k=2"));
  EXPECT_FALSE(is_safe_cell_id("/abs"));
  EXPECT_FALSE(is_safe_cell_id("a/../b"));
  EXPECT_FALSE(is_safe_cell_id(""));
}

TEST_F(BatchFolderTest, TaskStatesFromResultsRecordsAndTheLivesOfProcesses) {
  const auto m = manifest();
  const BatchPaths paths(out_);
  EXPECT_EQ(state_of(m, 1, here()), TaskState::pending);
  write(paths.result("x=1"), "{\"ppl\": 3}");
  write(paths.task_record(1), R"({"state": "failed", "attempt": 1})");
  EXPECT_EQ(state_of(m, 1, here()), TaskState::done) << "a result is the truth, whatever the record says";
  write(paths.task_record(2), R"({"state": "running", "host": "this-host", "pid": 42, "attempt": 2})");
  EXPECT_EQ(state_of(m, 2, here()), TaskState::running);
  EXPECT_EQ(state_of(m, 2, here([](std::int64_t) { return false; })), TaskState::lost);
  // The task's folder lock decides on this host: its pid may live on as another process.
  auto locked = here();
  locked.task_held = [](std::int64_t task) { return task == 1; };
  EXPECT_EQ(state_of(m, 2, locked), TaskState::lost) << "pid 42 alive, but no process holds task 2's lock";
  locked.task_held = [](std::int64_t task) { return task == 2; };
  EXPECT_EQ(state_of(m, 2, locked), TaskState::running);
  write(paths.task_record(2), R"({"state": "running", "host": "another-host", "pid": 42})");
  EXPECT_EQ(state_of(m, 2, here([](std::int64_t) { return false; })), TaskState::running)
      << "a process on another machine cannot be looked at from here";
  write(paths.task_record(2), R"({"state": "done"})");
  EXPECT_EQ(state_of(m, 2, here()), TaskState::lost) << "said done, left no result";
  write(paths.task_record(2), R"({"state": "preempted"})");
  EXPECT_EQ(state_of(m, 2, here()), TaskState::preempted);
  write(paths.task_record(3), R"({"state": "failed", "error": "boom\nstack traceback:", "attempt": 3})");
  const auto views = task_views(m, here());
  EXPECT_EQ(views[2].state, TaskState::failed);
  EXPECT_EQ(views[2].attempts, 3);
  EXPECT_EQ(task_detail(views[2]), "boom (log: " + paths.log(3) + ")");
  EXPECT_EQ(task_summary(views), "1 done, 1 preempted, 1 failed");
  write(paths.result("x=3"), "{\"ppl\": ");
  const auto damaged = task_views(m, here())[2];
  EXPECT_EQ(damaged.state, TaskState::failed);
  EXPECT_TRUE(contains(damaged.problem, "x=3/result.json is damaged")) << damaged.problem;
  EXPECT_TRUE(is_runnable(TaskState::pending) && is_runnable(TaskState::failed) && is_runnable(TaskState::lost) &&
              is_runnable(TaskState::preempted));
  EXPECT_FALSE(is_runnable(TaskState::done) || is_runnable(TaskState::running) || is_runnable(TaskState::queued) ||
               is_runnable(TaskState::requeued));
}

TEST_F(BatchFolderTest, TaskStatesOnSlurmFollowTheQueueOfTheNewestSubmission) {
  auto m = manifest();
  m.slurm_jobs = {{"100", {1, 2, 3}, "1-3", ""}, {"200", {2, 3}, "2-3", ""}};
  const BatchPaths paths(out_);
  auto facts = here();
  facts.queue = std::map<std::string, std::string>{{"100_1", "RUNNING"}, {"200_2", "PENDING"}, {"100_3", "RUNNING"}};
  write(paths.task_record(2), R"({"state": "preempted", "slurm_job": "100_2"})");
  write(paths.task_record(3), R"({"state": "running", "slurm_job": "200_3"})");
  const auto views = task_views(m, facts);
  EXPECT_EQ(views[0].state, TaskState::running);
  EXPECT_EQ(views[0].slurm_id, "100_1");
  EXPECT_EQ(views[1].state, TaskState::requeued) << "preempted and pending again";
  EXPECT_EQ(views[2].slurm_id, "200_3");
  EXPECT_EQ(views[2].state, TaskState::lost) << "running by its record, gone from the queue: it ended without a word";
  facts.queue = std::nullopt;
  EXPECT_EQ(task_views(m, facts)[2].state, TaskState::running) << "without squeue the record is all there is";
  facts.queue = std::map<std::string, std::string>{{"200_2", "PENDING"}};
  write(paths.task_record(2), R"({"state": "running"})");
  EXPECT_EQ(task_views(m, facts)[1].state, TaskState::queued);
}

TEST_F(BatchFolderTest, TheJobScriptCarriesTheOptionsAndTheQuotedCommand) {
  auto m = manifest();
  m.lmkit = "/opt/lm kit/lmkit";
  auto o = options_of({{"recipe", "r"},           {"backend", "slurm"}, {"partition", "gpu"},
                       {"time", "04:00:00"},      {"cpus_per_task", 8}, {"gpus_per_task", 1},
                       {"requeue", true},         {"signal_lead", 300}, {"sbatch_args", {"--mem=32G"}}});
  const auto script = sbatch_script(m, o);
  for (const char* line : {"#SBATCH --partition=gpu\n", "#SBATCH --time=04:00:00\n", "#SBATCH --cpus-per-task=8\n",
                           "#SBATCH --gpus-per-task=1\n", "#SBATCH --requeue\n", "#SBATCH --signal=B:USR1@300\n",
                           "#SBATCH --mem=32G\n", "#SBATCH --open-mode=append\n"}) {
    EXPECT_TRUE(contains(script, line)) << line;
  }
  EXPECT_TRUE(contains(script, "'/opt/lm kit/lmkit' 'run' '/recipes/grid.lua' '--set' 'scale=tiny' '--set' 'out=" + out_ +
                                   "' --threads"));
  EXPECT_TRUE(contains(script, "#SBATCH --output=\"" + out_ + "/batch/logs/task-%a.log\"\n"));
  EXPECT_TRUE(contains(script, "  if true; then")) << "requeue on";
  EXPECT_FALSE(contains(script, "#SBATCH --account"));
  o.requeue = false;
  EXPECT_TRUE(contains(sbatch_script(m, o), "  if false; then"));
  m.sets = {"tag=REQUEUE"};
  EXPECT_TRUE(contains(sbatch_script(m, o), "'tag=REQUEUE'")) << "the placeholder is filled before the command goes in";
}

TEST_F(BatchFolderTest, APlanGroupsTheCellsStillToRunAndNamesTheDataTheyMiss) {
  using nlohmann::json;
  write(BatchPaths(out_).result("x=3"), "{\"ppl\": 1}");  // finished: needs nothing
  const json small = {{"what", "small"}, {"epochs", 4}, {"estimate", {{"gpu_hours", 0.5}, {"peak_mb", 100}, {"from", "a test GPU"}}},
                      {"corpus", {{"name", "no-such-corpus-here"}, {"protocol", "odd"}}}};
  const json request = {{"out", out_}, {"cells", 4}, {"declared", true},
                        {"needs", {{{"id", "x=1"}, {"need", small}},
                                   {{"id", "x=2"}, {"need", small}},
                                   {{"id", "x=3"}, {"need", small}},
                                   {{"id", "x=4"}, {"failed", "a bug in needs"}},
                                   {{"id", "x=5"}, {"need", {{"what", "odd"}, {"estimate", {{"gpu_hours", "many"}}}}}}}}};
  const auto plan = plan_recipe(request);
  std::string text;
  for (const auto& line : plan.lines) text += line + "\n";
  EXPECT_TRUE(contains(text, "plan: 4 of 4 cells to run\n")) << text;
  EXPECT_TRUE(contains(text, "  2 × small: 4 epochs, about 0.50 GPU-hours, 100 MB on the device each\n")) << text;
  EXPECT_TRUE(contains(text, "  1 × x=4: ? epochs, its needs failed: a bug in needs\n")) << text;
  EXPECT_TRUE(contains(text, "  1 × odd: ? epochs, no estimate\n")) << text;  // an estimate without a number is none
  EXPECT_TRUE(contains(text, "  in all about 1.0 GPU-hours (a test GPU)\n")) << text;
  ASSERT_EQ(plan.problems.size(), 1u);
  // An unknown protocol is the full one; a corpus nowhere names the folders tried and the way out.
  EXPECT_TRUE(contains(plan.problems[0], "2 tasks need no-such-corpus-here's train.txt, valid.txt, test.txt (full protocol), "
                                         "no no-such-corpus-here/ folder where lmkit looks (tried: ")) << plan.problems[0];
  EXPECT_TRUE(contains(plan.problems[0], "get it with scripts/get_data.sh no-such-corpus-here")) << plan.problems[0];
  const auto undeclared = plan_recipe({{"out", out_}, {"cells", 4}, {"declared", false}});
  EXPECT_EQ(undeclared.lines, std::vector<std::string>{"plan: 4 cells (the recipe declares no needs: no estimate, no data check)"});
  EXPECT_TRUE(undeclared.problems.empty());
}

}  // namespace
}  // namespace lmkit::training
