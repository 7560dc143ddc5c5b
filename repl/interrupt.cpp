#include "repl/interrupt.h"

#include <unistd.h>

#include <csignal>

#include "runtime/core/interruption.h"

namespace lmkit::repl {
namespace {

lua_State* g_running_state = nullptr;
struct sigaction g_previous_action;
volatile std::sig_atomic_t g_lua_stopped = 0;  // a Ctrl-C stopped Lua code (not C++ work that polls)

void stop_hook(lua_State* L, lua_Debug*) {
  lua_sethook(L, nullptr, 0, 0);
  luaL_error(L, "interrupted!");
}

void on_sigint(int signal_number) {
  if (request_interruption()) {
    static const char kNotice[] = "\n[Ctrl-C] stopping at the next safe point (training saves its state); "
                                  "Ctrl-\\ quits at once\n";
    [[maybe_unused]] const auto written = ::write(STDERR_FILENO, kNotice, sizeof kNotice - 1);
    return;
  }
  std::signal(signal_number, SIG_DFL);  // a second Ctrl-C ends the process
  g_lua_stopped = 1;
  note_lua_interruption();
  // lua_sethook is safe in a signal handler (Lua's own interpreter relies on it).
  if (g_running_state) lua_sethook(g_running_state, stop_hook, LUA_MASKCALL | LUA_MASKRET | LUA_MASKCOUNT, 1);
}

}  // namespace

bool interrupted_by_user() { return g_lua_stopped != 0 || was_interrupted(); }

InterruptGuard::InterruptGuard(lua_State* L) {
  // Each guarded piece of work (a REPL line, a script, a batch) starts with no Ctrl-C on record.
  g_lua_stopped = 0;
  forget_interruptions();
  g_running_state = L;
  struct sigaction action {};
  action.sa_handler = on_sigint;
  sigemptyset(&action.sa_mask);
  sigaction(SIGINT, &action, &g_previous_action);
}

InterruptGuard::~InterruptGuard() {
  sigaction(SIGINT, &g_previous_action, nullptr);
  if (g_running_state) lua_sethook(g_running_state, nullptr, 0, 0);
  g_running_state = nullptr;
}

}  // namespace lmkit::repl
