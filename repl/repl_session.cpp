#include "repl/repl_session.h"

#include <readline/history.h>
#include <readline/readline.h>
#include <unistd.h>

#include <csetjmp>
#include <csignal>
#include <cstring>
#include <cstdlib>
#include <iostream>
#include <optional>

#include "bindings/lua_config.h"
#include "bindings/lua_module.h"
#include "repl/completion.h"
#include "repl/lua_state_handle.h"
#include "repl/package_path.h"
#include "repl/repl_evaluator.h"
#include "runtime/core/version.h"

namespace lmkit::repl {
namespace {

constexpr int kHistoryLength = 1000;
constexpr const char* kPrompt = "lmkit> ";
constexpr const char* kContinuationPrompt = "   >> ";

// Ctrl-C while typing abandons the line: readline's own SIGINT handler cleans up the terminal and
// then calls ours, which jumps back out of readline() (the approach of lua.c-style REPLs that keeps
// readline's normal, type-ahead preserving input path).
sigjmp_buf g_input_jump;
volatile std::sig_atomic_t g_reading = 0;
lua_State* g_completion_state = nullptr;
std::vector<std::string> g_matches;

void on_sigint_while_reading(int) {
  if (g_reading) siglongjmp(g_input_jump, 1);
}

char* match_generator(const char*, int state) {
  static std::size_t next;
  if (state == 0) next = 0;
  if (next >= g_matches.size()) return nullptr;
  return strdup(g_matches[next++].c_str());
}

char** attempt_completion(const char* text, int, int) {
  rl_attempted_completion_over = 1;      // never fall back to file names
  rl_completion_append_character = '\0';  // readline resets it to ' ' before every completion
  g_matches = complete(g_completion_state, text);
  if (g_matches.empty()) return nullptr;
  return rl_completion_matches(text, match_generator);
}

enum class ReadResult { Line, Interrupted, EndOfInput };

ReadResult read_terminal_line(const char* prompt, std::string& line) {
  struct sigaction action {}, previous {};
  action.sa_handler = on_sigint_while_reading;
  sigemptyset(&action.sa_mask);
  sigaction(SIGINT, &action, &previous);
  ReadResult result;
  if (sigsetjmp(g_input_jump, 1) != 0) {
    g_reading = 0;
    rl_free_line_state();
    rl_cleanup_after_signal();
    std::cout << "\n" << std::flush;
    result = ReadResult::Interrupted;
  } else {
    g_reading = 1;
    char* raw = readline(prompt);
    g_reading = 0;
    if (raw) {
      line = raw;
      std::free(raw);
      result = ReadResult::Line;
    } else {
      result = ReadResult::EndOfInput;
    }
  }
  sigaction(SIGINT, &previous, nullptr);
  return result;
}

std::string history_path(const ReplOptions& options) {
  if (!options.history_file.empty()) return options.history_file;
  if (const char* env = std::getenv("LMKIT_HISTORY")) return env;
  if (const char* home = std::getenv("HOME")) return std::string(home) + "/.lmkit_history";
  return "";
}

void print_outcome(const ReplEvaluator::Outcome& outcome) {
  if (outcome.output.empty()) return;
  (outcome.failed ? std::cerr : std::cout) << outcome.output << "\n" << std::flush;
}

int run_terminal(lua_State* L, const ReplOptions& options) {
  const auto info = build_info();
  std::cout << "lmkit " << info.lmkit_version << " — " << LUA_RELEASE << ", Torch " << info.torch_version
            << " (" << (info.cuda_usable ? "cuda" : "cpu") << ")\n"
            << "help() lists the functions, help(x) documents x; Tab completes; Ctrl-D quits.\n";
  rl_readline_name = "lmkit";
  rl_completer_word_break_characters = const_cast<char*>(kWordBreakCharacters);
  rl_completion_append_character = '\0';
  rl_attempted_completion_function = attempt_completion;
  g_completion_state = L;
  const std::string history = history_path(options);
  using_history();
  stifle_history(kHistoryLength);
  if (!history.empty()) read_history(history.c_str());

  ReplEvaluator evaluator(L);
  while (true) {
    std::string line;
    const auto read = read_terminal_line(evaluator.pending() ? kContinuationPrompt : kPrompt, line);
    if (read == ReadResult::EndOfInput) {
      std::cout << "\n";
      if (!evaluator.pending()) break;
      // Ctrl-D inside a statement: it is dropped, said so, and the session goes on (a second
      // Ctrl-D at the prompt quits), where a silent exit would lose the session's state.
      std::cerr << "lmkit: input ended inside an unfinished statement: dropped it (Ctrl-D at the prompt quits)\n";
      evaluator.reset();
      continue;
    }
    if (read == ReadResult::Interrupted) {
      evaluator.reset();
      continue;
    }
    if (!evaluator.pending() && line.find_first_not_of(" \t") == std::string::npos) continue;
    const auto outcome = evaluator.feed(line);
    if (outcome.status == ReplEvaluator::Status::NeedsMore) continue;
    add_history(outcome.chunk.c_str());
    if (!history.empty() && append_history(1, history.c_str()) != 0) {
      write_history(history.c_str());  // the file did not exist yet
    }
    print_outcome(outcome);
  }
  if (!history.empty()) history_truncate_file(history.c_str(), kHistoryLength);
  return 0;
}

// Lines from a pipe or file: no prompts, no editing; the exit status reports whether every
// chunk succeeded (so `lmkit repl < session.lua` can be used in scripts).
int run_piped(lua_State* L) {
  ReplEvaluator evaluator(L);
  bool any_failed = false;
  std::string line;
  while (std::getline(std::cin, line)) {
    const auto outcome = evaluator.feed(line);
    if (outcome.status == ReplEvaluator::Status::NeedsMore) continue;
    any_failed = any_failed || outcome.failed;
    print_outcome(outcome);
  }
  if (evaluator.pending()) {
    std::cerr << "lmkit: input ended inside an unfinished statement\n";
    return 1;
  }
  return any_failed ? 1 : 0;
}

}  // namespace

int run_repl(const ReplOptions& options) {
  LuaStateHandle state(lua::new_lmkit_state());
  lua::set_cli_settings(state.get(), options.settings);
  set_package_path(state.get(), "");  // lmkit's presets for `require "presets.awd_lstm"`
  if (isatty(STDIN_FILENO)) return run_terminal(state.get(), options);
  return run_piped(state.get());
}

}  // namespace lmkit::repl
