// The `lmkit` executable: run a recipe, start the REPL, print the version.
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <iostream>

#include "bindings/lua_call.h"
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

int main(int argc, char** argv) {
  CLI::App app{"lmkit — a toolkit for softmax-bottleneck research on word-level language models,\n"
               "C++ (LibTorch) scripted in Lua 5.4. Without a command, starts the REPL."};
  app.set_version_flag("--version", version_text, "Print the lmkit, Lua and Torch versions and CUDA availability");
  app.require_subcommand(0, 1);

  std::string script;
  std::vector<std::string> sets, script_args;
  bool no_strict = false;
  int threads = 0;

  auto* run = app.add_subcommand("run", "Run a Lua recipe or script");
  run->add_option("script", script, "The .lua file to run")->required();
  run->add_option("--set", sets, "Override a setting: key=value (repeatable; dotted keys for nested tables)")
      ->expected(1)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  run->add_option("args", script_args, "Arguments for the script, after --");
  run->add_flag("--no-strict", no_strict, "Allow undeclared globals (off by default: a typo is an error)");
  run->add_option("--threads", threads, "CPU threads for Torch and OpenBLAS (default: Torch's choice)");

  auto* repl = app.add_subcommand("repl", "Interactive Lua with lmkit loaded");
  repl->add_option("--set", sets, "Settings visible as lmkit.settings (key=value, repeatable)")
      ->expected(1)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  repl->add_option("--threads", threads, "CPU threads for Torch and OpenBLAS");

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int code = app.exit(e);
    return code == 0 ? 0 : 2;
  }

  try {
    if (threads > 0) lmkit::set_threads(threads);
    if (*run) {
      lmkit::repl::ScriptOptions options;
      options.path = script;
      options.settings = parse_settings(sets);
      options.args = script_args;
      options.strict_globals = !no_strict;
      return lmkit::repl::run_script(options);
    }
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
