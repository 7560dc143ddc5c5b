// The `lmkit` executable: run a recipe, start the REPL, print the version.
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <iostream>
#include <optional>
#include <string>

#include "bindings/lua_call.h"
#include "repl/batch_command.h"
#include "repl/recipe_catalog.h"
#include "repl/repl_session.h"
#include "repl/script_runner.h"
#include "runtime/core/device.h"
#include "runtime/core/error.h"
#include "runtime/core/version.h"

namespace {

std::vector<lmkit::config::Setting> parse_settings(const std::vector<std::string>& arguments) {
  std::vector<lmkit::config::Setting> settings;
  for (const auto& a : arguments) settings.push_back(lmkit::config::parse_setting(a));
  return settings;
}

std::string version_text() {
  return lmkit::describe_build(lmkit::build_info(), LUA_RELEASE);
}

}  // namespace

// `lmkit run RECIPE --help` (or -h) asks for the recipe's settings, not for the run command's help.
std::optional<std::string> recipe_help_request(int argc, char** argv) {
  if (argc < 4 || std::string(argv[1]) != "run") return std::nullopt;
  const std::string target = argv[2];
  if (target.empty() || target[0] == '-') return std::nullopt;
  for (int i = 3; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--") break;
    if (a == "--help" || a == "-h") return target;
  }
  return std::nullopt;
}

int main(int argc, char** argv) {
  if (const auto target = recipe_help_request(argc, argv)) {
    try {
      return lmkit::repl::show_recipe_help(*target);
    } catch (const std::exception& e) {
      std::cerr << "lmkit: " << lmkit::lua::describe_exception(std::current_exception()) << "\n";
      return 2;
    }
  }
  CLI::App app{"lmkit — a toolkit for softmax-bottleneck research on word-level language models,\n"
               "C++ (LibTorch) scripted in Lua 5.4. Without a command, starts the REPL."};
  app.set_version_flag("--version", version_text, "Print the lmkit, Lua and Torch versions and CUDA availability");
  app.require_subcommand(0, 1);

  std::string script;
  std::vector<std::string> sets, script_args;
  bool no_strict = false;
  int threads = 0;

  auto* run = app.add_subcommand("run", "Run a Lua recipe or script (a file, or the name of one of lmkit's recipes)");
  run->add_option("script", script, "The .lua file to run, or a recipe's name (lmkit recipes lists them)")->required();
  run->add_option("--set", sets, "Override a setting: key=value (repeatable; dotted keys for nested tables)")
      ->expected(1)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  run->add_option("args", script_args, "Arguments for the script, after --");
  run->add_flag("--no-strict", no_strict, "Allow undeclared globals (off by default: a typo is an error)");
  run->add_option("--threads", threads, "CPU threads for Torch and OpenBLAS (default: Torch's choice)");

  auto* recipes = app.add_subcommand("recipes", "List lmkit's recipes and what each reproduces");

  auto* repl = app.add_subcommand("repl", "Interactive Lua with lmkit loaded");
  repl->add_option("--set", sets, "Settings visible as lmkit.settings (key=value, repeatable)")
      ->expected(1)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  repl->add_option("--threads", threads, "CPU threads for Torch and OpenBLAS");

  // Batch runs of a recipe's grid (lmkit.batch; docs/cluster.md).
  std::string backend = "local", partition, account, time_limit, batch_dir;
  int jobs = 0, cpus_per_task = 0, gpus_per_task = 0, signal_lead = 120, task_threads = 0;
  double wait_timeout = 0;
  bool requeue = false, wait = false, dry_run = false;
  std::vector<std::string> sbatch_args;
  auto* batch = app.add_subcommand("batch", "Run a recipe's grid as batch tasks: here (--backend local) or as a Slurm job array");
  batch->add_option("recipe", script, "The recipe (a .lua file or a recipe's name) whose cells become the tasks")->required();
  batch->add_option("--backend", backend, "local: processes on this machine; slurm: one sbatch job array")
      ->check(CLI::IsMember({"local", "slurm"}));
  batch->add_option("--set", sets, "A recipe setting for the grid and every task (key=value, repeatable; out=DIR is the batch folder)")
      ->expected(1)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  batch->add_option("--jobs", jobs, "At most this many tasks at once (local default: 1, or one per GPU; slurm: the array's %limit)")
      ->check(CLI::PositiveNumber);
  batch->add_option("--threads", task_threads, "CPU threads per local task (default: cores / jobs)")->check(CLI::PositiveNumber);
  batch->add_option("--partition", partition, "Slurm partition");
  batch->add_option("--account", account, "Slurm account");
  batch->add_option("--time", time_limit, "Slurm time limit per task, e.g. 04:00:00");
  batch->add_option("--cpus-per-task", cpus_per_task, "Slurm CPUs per task (also the task's threads)")->check(CLI::PositiveNumber);
  batch->add_option("--gpus-per-task", gpus_per_task, "Slurm GPUs per task")->check(CLI::NonNegativeNumber);
  batch->add_flag("--requeue", requeue, "Slurm: a task stopped by SIGTERM/SIGUSR1 saves its state and requeues itself to resume");
  batch->add_option("--signal-lead", signal_lead, "Slurm: seconds before the time limit at which a task is told to save its state (SIGUSR1)")
      ->check(CLI::PositiveNumber);
  batch->add_option("--sbatch-arg", sbatch_args, "An extra #SBATCH line, e.g. --sbatch-arg=--mem=32G (repeatable)")
      ->expected(1)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  batch->add_flag("--wait", wait, "Slurm: wait until every submitted task has ended, showing progress");
  batch->add_option("--wait-timeout", wait_timeout, "Slurm: with --wait, give up waiting after this many seconds");
  batch->add_flag("--dry-run", dry_run, "Show what would run or be submitted, change nothing but the manifest");

  auto* status = app.add_subcommand("status", "Show each task of a batch folder: done, running, queued, failed, ...");
  status->add_option("dir", batch_dir, "The batch folder (the recipe's out)")->required();
  auto* report = app.add_subcommand("report", "Render a batch's report from the tasks that have finished (missing cells marked)");
  report->add_option("dir", batch_dir, "The batch folder (the recipe's out)")->required();

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int code = app.exit(e);
    return code == 0 ? 0 : 2;
  }

  try {
    if (threads > 0) lmkit::set_threads(threads);
    if (*recipes) return lmkit::repl::list_recipes();
    if (*run) {
      lmkit::repl::ScriptOptions options;
      options.path = lmkit::repl::resolve_recipe(script);
      options.settings = parse_settings(sets);
      options.args = script_args;
      options.strict_globals = !no_strict;
      return lmkit::repl::run_script(options);
    }
    if (*batch) {
      lmkit::repl::BatchOptions options;
      options.recipe = lmkit::repl::resolve_recipe(script);
      options.sets = sets;
      auto& o = options.options;
      o["backend"] = backend;
      if (jobs > 0) o["jobs"] = jobs;
      if (task_threads > 0) o["threads"] = task_threads;
      if (!partition.empty()) o["partition"] = partition;
      if (!account.empty()) o["account"] = account;
      if (!time_limit.empty()) o["time"] = time_limit;
      if (cpus_per_task > 0) o["cpus_per_task"] = cpus_per_task;
      if (gpus_per_task > 0) o["gpus_per_task"] = gpus_per_task;
      o["requeue"] = requeue;
      o["signal_lead"] = signal_lead;
      o["sbatch_args"] = sbatch_args;
      o["wait"] = wait;
      if (wait_timeout > 0) o["wait_timeout"] = wait_timeout;
      o["dry_run"] = dry_run;
      o["gpus"] = lmkit::cuda_device_count();
      return lmkit::repl::run_batch(options);
    }
    if (*status) return lmkit::repl::show_batch_status(batch_dir);
    if (*report) return lmkit::repl::report_batch(batch_dir);
    if (*repl || isatty(STDIN_FILENO)) {
      lmkit::repl::ReplOptions options;
      options.settings = parse_settings(sets);
      return lmkit::repl::run_repl(options);
    }
    std::cout << app.help();
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "lmkit: " << lmkit::lua::describe_exception(std::current_exception()) << "\n";
    return 2;
  }
}
