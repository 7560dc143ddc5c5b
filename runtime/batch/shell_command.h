// A cluster's tools run through the shell as a person would (sbatch, squeue: found on PATH), with
// their output read back; arguments quoted so that any path survives.
#pragma once
#include <optional>
#include <string>

namespace lmkit::training {

struct ShellOutput {
  std::string text;  // stdout and stderr together
  int status = 0;    // the exit status (128 + n when killed by signal n)
};

// nullopt when the shell cannot be started.
std::optional<ShellOutput> run_shell(const std::string& command);
// Whether `name` is a command on PATH.
bool have_command(const std::string& name);
// 'text' with every ' escaped, for a shell command line.
std::string shell_quote(const std::string& text);
// `text` as one word of a command line a person may paste: as it is when it holds only characters
// the shell takes literally, else shell_quote'd.
std::string shell_word(const std::string& text);

}  // namespace lmkit::training
