#include "repl/resume_command.h"

#include <iostream>

#include <nlohmann/json.hpp>

#include "repl/interrupt.h"
#include "runtime/core/device.h"
#include "runtime/core/error.h"
#include "runtime/core/preemption.h"
#include "runtime/training/resume.h"
#include "runtime/runs/run_status.h"
#include "runtime/training/trainer.h"

namespace lmkit::repl {

void add_resume_commands(CLI::App& app, ResumeCommand& c) {
  c.resume = app.add_subcommand("resume", "Continue a training run from its state.ckpt, step for step (lmkit.resume): "
                                          "a stopped or preempted run, or a finished one given more epochs");
  c.resume->add_option("dir", c.dir, "The run directory")->required();
  c.resume->add_option("--epochs", c.epochs, "Epochs of the main stage in all (more than it has: trains on)")
      ->check(CLI::Range(static_cast<std::int64_t>(0), static_cast<std::int64_t>(1000000)));
  c.resume->add_option("--finetune-epochs", c.finetune_epochs, "Epochs of the finetune stage in all")
      ->check(CLI::Range(static_cast<std::int64_t>(0), static_cast<std::int64_t>(1000000)));
  c.resume->add_option("--max-seconds", c.max_seconds, "Wall-time budget of the run over all its sessions (0: none)")
      ->check(CLI::Range(0.0, 1e9));
  c.resume->add_option("--device", c.device, "cpu, cuda or cuda:N (default: cuda when usable, else cpu)");

  c.finetune = app.add_subcommand("finetune", "Finetune a training run in its own directory: AWD-LSTM's finetune.py, "
                                              "ASGD restarted from its best model (runs trained with optimizer sgd)");
  c.finetune->add_option("dir", c.dir, "The run directory")->required();
  c.finetune->add_option("--epochs", c.finetune_epochs, "Finetune epochs in all (the stage stops earlier by the non-monotone criterion)")
      ->required()
      ->check(CLI::Range(static_cast<std::int64_t>(1), static_cast<std::int64_t>(1000000)));
  c.finetune->add_option("--lr", c.lr, "The finetune stage's learning rate (default: the run's finetune_lr, else its lr)")
      ->check(CLI::PositiveNumber);
  c.finetune->add_option("--max-seconds", c.max_seconds, "Wall-time budget of the run over all its sessions (0: none)")
      ->check(CLI::Range(0.0, 1e9));
  c.finetune->add_option("--device", c.device, "cpu, cuda or cuda:N (default: cuda when usable, else cpu)");
}

int run_resume(const ResumeCommand& c) {
  training::ResumeRequest request;
  request.device = c.device.empty() ? default_device_name() : c.device;
  parse_device(request.device);  // a device this machine lacks is named before the corpus is read
  auto& changes = request.option_changes;
  if (c.epochs) changes["epochs"] = *c.epochs;
  if (c.finetune_epochs) changes["finetune_epochs"] = *c.finetune_epochs;
  if (c.max_seconds) changes["max_seconds"] = *c.max_seconds;
  if (c.lr) changes["finetune_lr"] = *c.lr;
  if (*c.finetune) {
    // finetune is the stage after a finished main stage; an unfinished run is resumed first.
    const auto status = training::run_status(c.dir);
    if (status.state == "diverged") {
      throw UsageError("run '" + c.dir + "' diverged: there is nothing to finetune in it; finetune its best model in a "
                       "run of its own (init_from = \"" + c.dir + "\", epochs = 0, finetune_epochs = N)");
    }
    if (status.state != "finished") {
      throw UsageError("run '" + c.dir + "' is " + status.state + ", not finished: continue it to its end first (lmkit resume " +
                       c.dir + "), then finetune it");
    }
  }
  auto run = training::prepare_resume(c.dir, std::move(request));
  training::Trainer trainer(run.model, std::move(run.corpus), run.options, c.dir);
  int exit_status = 0;
  {
    InterruptGuard guard(nullptr);  // Ctrl-C: the trainer stops at its next step boundary, state saved
    try {
      const auto summary = trainer.run();
      const auto status = summary.value("status", std::string());
      // As `lmkit status`: 0 finished, 1 diverged or failed, 3 something left (a time limit, a stop).
      exit_status = status == "finished" ? 0 : status == "stopped" || status == "time_limit" ? 3 : 1;
    } catch (const lmkit::Preempted& e) {
      std::cerr << "lmkit: " << e.what() << "\n";
      exit_status = interrupted_by_user() ? 130 : lmkit::kPreemptedExitStatus;
    }
  }
  for (const auto& line : training::run_status(c.dir).lines()) std::cout << line << "\n";
  return exit_status;
}

}  // namespace lmkit::repl
