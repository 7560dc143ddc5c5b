// The `lmkit` executable: run a recipe, start the REPL, print the version.
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <iostream>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "repl/batch_command.h"
#include "repl/compare_command.h"
#include "repl/run_folder_command.h"
#include "repl/doctor_command.h"
#include "repl/head_catalog.h"
#include "repl/recipe_catalog.h"
#include "repl/repl_session.h"
#include "repl/resume_command.h"
#include "repl/script_runner.h"
#include "runtime/core/determinism.h"
#include "runtime/core/device.h"
#include "runtime/core/error.h"
#include "runtime/core/exception_text.h"
#include "runtime/core/number_text.h"
#include "runtime/core/tensor_memory.h"
#include "runtime/core/version.h"
#include "runtime/core/warning.h"

namespace {

std::vector<lmkit::config::Setting> parse_settings(const std::vector<std::string>& arguments) {
  std::vector<lmkit::config::Setting> settings;
  for (const auto& a : arguments) settings.push_back(lmkit::config::parse_setting(a));
  return settings;
}

std::string version_text() {
  return lmkit::describe_build(lmkit::build_info(), LUA_RELEASE);
}

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

// What the command line asked for; each subcommand fills its own part.
struct ScriptArguments {
  std::string script;
  std::vector<std::string> sets, args;
  bool no_strict = false;
  int threads = 0;
};

// The whole of `text` as an integer, or nothing ("12x", "", a value beyond long long).
std::optional<long long> whole_integer(const std::string& text) {
  std::size_t used = 0;
  long long value = 0;
  try {
    value = std::stoll(text, &used);
  } catch (const std::exception&) {
    return std::nullopt;
  }
  if (used == 0 || used != text.size()) return std::nullopt;
  return value;
}

// An integer option's range, with why its upper end is there.
CLI::Validator within(long long low, long long high, const std::string& why) {
  return CLI::Validator(
      [low, high, why](std::string& text) -> std::string {
        const auto value = whole_integer(text);
        if (!value || *value < low || *value > high) {
          return "must be an integer from " + lmkit::integer_text(low) + " to " + lmkit::integer_text(high) + " (" +
                 why + "), got " + text;
        }
        return std::string();
      },
      "INT in " + lmkit::integer_text(low) + ".." + lmkit::integer_text(high));
}

void add_set_option(CLI::App* command, std::vector<std::string>& sets, const std::string& doc) {
  command->add_option("--set", sets, doc)->expected(1)->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
}

CLI::App* add_run_command(CLI::App& app, ScriptArguments& a) {
  auto* run = app.add_subcommand("run", "Run a Lua recipe or script (a file, or the name of one of lmkit's recipes)");
  run->add_option("script", a.script, "The .lua file to run, or a recipe's name (lmkit recipes lists them)")->required();
  add_set_option(run, a.sets, "Override a setting: key=value (repeatable; dotted keys for nested tables)");
  run->add_option("args", a.args, "Arguments for the script, after --");
  run->add_flag("--no-strict", a.no_strict, "Allow undeclared globals (off by default: a typo is an error)");
  run->add_option("--threads", a.threads, "CPU threads for Torch and OpenBLAS (default: Torch's choice)");
  return run;
}

CLI::App* add_repl_command(CLI::App& app, ScriptArguments& a) {
  auto* repl = app.add_subcommand("repl", "Interactive Lua with lmkit loaded");
  add_set_option(repl, a.sets, "Settings visible as lmkit.settings (key=value, repeatable)");
  repl->add_option("--threads", a.threads, "CPU threads for Torch and OpenBLAS");
  return repl;
}

struct Commands {
  CLI::App *run, *recipes, *heads, *repl, *status, *report, *doctor;
  lmkit::repl::BatchCommand batch;
  lmkit::repl::CompareOptions* compare = nullptr;
  lmkit::repl::ResumeCommand* resume = nullptr;
};

// A new machine's first command, and what a bug report attaches (docs/getting-started.md).
CLI::App* add_doctor_command(CLI::App& app, lmkit::repl::DoctorOptions& d) {
  auto* doctor = app.add_subcommand("doctor", "Check this machine: versions, build, each fused kernel against ATen, "
                                              "a short training run on the device against the CPU; exit 0 when all pass");
  doctor->add_option("--device", d.device, "cpu, cuda or cuda:N (default: cuda when usable, else cpu)");
  doctor->add_option("--steps", d.steps, "Steps of the training comparison, per head and per device")
      ->check(within(1, 100000, "its tiny models need 20; 100000 takes minutes per head"));
  return doctor;
}

Commands add_commands(CLI::App& app, ScriptArguments& a, std::string& batch_dir, std::string& head_kind,
                      lmkit::repl::DoctorOptions& d, lmkit::repl::CompareOptions& compare,
                      lmkit::repl::ResumeCommand& resume) {
  Commands c{};
  c.run = add_run_command(app, a);
  c.recipes = app.add_subcommand("recipes", "List lmkit's recipes and what each reproduces");
  c.heads = app.add_subcommand("heads", "List the output heads (registered kinds), their options and capabilities");
  c.heads->add_option("kind", head_kind, "One kind: its options with their ranges, defaults and docs");
  c.repl = add_repl_command(app, a);
  c.batch = lmkit::repl::add_batch_command(app);
  c.status = app.add_subcommand("status", "Where a batch folder's tasks, a recipe's cells or a training run stand: "
                                          "done, running (epoch, best valid ppl, ETA), failed, ...");
  c.status->add_option("dir", batch_dir, "A batch or recipe output folder (the recipe's out), or a run directory")->required();
  c.report = app.add_subcommand("report", "Render the report of a batch or recipe folder from the cells that have finished "
                                          "(missing ones marked), or a run directory's epochs and learning curve");
  c.report->add_option("dir", batch_dir, "A batch or recipe output folder, or a run directory")->required();
  lmkit::repl::add_compare_command(app, compare);
  c.compare = &compare;
  lmkit::repl::add_resume_commands(app, resume);
  c.resume = &resume;
  c.doctor = add_doctor_command(app, d);
  return c;
}

int run_command(const CLI::App& app, const Commands& c, const ScriptArguments& a,
                const std::string& batch_dir, const std::string& head_kind, const lmkit::repl::DoctorOptions& d) {
  if (a.threads > 0) lmkit::set_threads(a.threads);
  if (*c.recipes) return lmkit::repl::list_recipes();
  if (*c.heads) return lmkit::repl::list_heads(head_kind);
  if (*c.run) {
    lmkit::repl::ScriptOptions options;
    options.path = lmkit::repl::resolve_recipe(a.script);
    options.settings = parse_settings(a.sets);
    options.args = a.args;
    options.strict_globals = !a.no_strict;
    return lmkit::repl::run_script(options);
  }
  if (*c.batch.command) return lmkit::repl::run_batch(c.batch);
  if (*c.status) return lmkit::repl::show_folder_status(batch_dir);
  if (*c.report) return lmkit::repl::report_folder(batch_dir);
  if (*c.compare->command) return lmkit::repl::run_compare(*c.compare);
  if (*c.resume->resume || *c.resume->finetune) return lmkit::repl::run_resume(*c.resume);
  if (*c.doctor) return lmkit::repl::run_doctor(d);
  if (*c.repl || isatty(STDIN_FILENO)) {
    lmkit::repl::ReplOptions options;
    options.settings = parse_settings(a.sets);
    return lmkit::repl::run_repl(options);
  }
  std::cout << app.help();
  return 2;
}

int report_failure() {
  std::cerr << "lmkit: " << lmkit::describe_exception(std::current_exception()) << "\n";
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  // First, while the process has one thread: the environment is read (and CUBLAS_WORKSPACE_CONFIG
  // set, for LMKIT_DETERMINISTIC=1) before anything can start CUDA; Torch's warnings go through
  // lmkit's, each text once.
  lmkit::route_torch_warnings();
  // Before any tensor exists: every host tensor of the process is counted (docs/lua-api.md, "Memory"),
  // and none allocated by Torch's own allocator is freed through lmkit's.
  lmkit::count_host_tensor_memory();
  try {
    lmkit::deterministic_from_environment();
  } catch (const std::exception&) {
    return report_failure();
  }
  if (const auto target = recipe_help_request(argc, argv)) {
    try {
      return lmkit::repl::show_recipe_help(*target);
    } catch (const std::exception&) {
      return report_failure();
    }
  }
  CLI::App app{"lmkit — a toolkit for softmax-bottleneck research on word-level language models,\n"
               "C++ (LibTorch) scripted in Lua 5.4. Without a command, starts the REPL."};
  app.set_version_flag("--version", version_text, "Print the lmkit, Lua and Torch versions and CUDA availability");
  app.require_subcommand(0, 1);
  ScriptArguments script;
  std::string batch_dir, head_kind;
  lmkit::repl::DoctorOptions doctor;
  lmkit::repl::CompareOptions compare;
  lmkit::repl::ResumeCommand resume;
  const Commands commands = add_commands(app, script, batch_dir, head_kind, doctor, compare, resume);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int code = app.exit(e);
    return code == 0 ? 0 : 2;
  }
  try {
    return run_command(app, commands, script, batch_dir, head_kind, doctor);
  } catch (const std::exception&) {
    return report_failure();
  }
}
