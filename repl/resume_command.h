// `lmkit resume DIR` and `lmkit finetune DIR`: a stopped, preempted or finished training run
// continued from the shell, as lmkit.resume(dir, {...}) continues it from Lua (runtime/training/
// resume.h rebuilds the model and corpus from config.json). `finetune` is resume with a finetune
// stage: AWD-LSTM's finetune.py from the run's best model, in the same run directory.
#pragma once
#include <cstdint>
#include <optional>
#include <string>

#include <CLI/CLI.hpp>

namespace lmkit::repl {

struct ResumeCommand {
  CLI::App* resume = nullptr;
  CLI::App* finetune = nullptr;
  std::string dir;
  std::string device;  // "" : cuda when usable, else cpu
  std::optional<std::int64_t> epochs, finetune_epochs;
  std::optional<double> max_seconds, lr;
};

// Declares both commands on `app`; `command` receives their arguments (and must outlive the parse).
void add_resume_commands(CLI::App& app, ResumeCommand& command);

// Trains the run on and prints where it stands: 0 when it finished, 1 when it diverged or failed,
// 3 when a time limit or a stop left epochs to train, 75 when a signal preempted it (resumable),
// 130 after Ctrl-C (its state saved). A mistake (no run there, a head written in Lua, an option the
// run cannot take, `finetune` of a run whose main stage has not finished) throws UsageError before
// any step.
int run_resume(const ResumeCommand& command);

}  // namespace lmkit::repl
