#include "runtime/batch/shell_command.h"

#include <sys/wait.h>

#include <cstdio>

namespace lmkit::training {

std::optional<ShellOutput> run_shell(const std::string& command) {
  FILE* pipe = ::popen((command + " 2>&1").c_str(), "r");
  if (pipe == nullptr) return std::nullopt;
  ShellOutput output;
  char buffer[4096];
  std::size_t n = 0;
  while ((n = std::fread(buffer, 1, sizeof buffer, pipe)) > 0) output.text.append(buffer, n);
  const int status = ::pclose(pipe);
  if (status == -1) return std::nullopt;
  output.status = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return output;
}

bool have_command(const std::string& name) {
  const auto output = run_shell("command -v " + shell_quote(name));
  return output && output->status == 0;
}

std::string shell_quote(const std::string& text) {
  std::string quoted = "'";
  for (const char c : text) quoted += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return quoted + "'";
}

std::string shell_word(const std::string& text) {
  const bool plain = !text.empty() && text.find_first_not_of("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
                                                             "0123456789_./=:,+@%^-") == std::string::npos;
  return plain ? text : shell_quote(text);
}

}  // namespace lmkit::training
