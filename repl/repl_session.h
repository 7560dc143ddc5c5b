// `lmkit repl`: the interactive session on a terminal — GNU readline line editing, persistent
// history, tab completion, continuation prompts, Ctrl-C that cancels input or interrupts a
// running statement without ending the session. Without a terminal it reads lines from stdin.
#pragma once
#include <string>
#include <vector>

#include "runtime/config/cli_settings.h"

namespace lmkit::repl {

struct ReplOptions {
  std::vector<config::Setting> settings;
  std::string history_file;  // empty: $LMKIT_HISTORY, else ~/.lmkit_history
};

int run_repl(const ReplOptions& options);

}  // namespace lmkit::repl
