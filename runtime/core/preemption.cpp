#include "runtime/core/preemption.h"

#include <atomic>
#include <csignal>

namespace lmkit {
namespace {

volatile std::sig_atomic_t g_signal = 0;
std::atomic<int> g_depth{0};
std::atomic<bool> g_preempted{false};
struct sigaction g_previous_term, g_previous_usr1;

extern "C" void on_preemption_signal(int signal) { g_signal = signal; }

}  // namespace

PreemptionGuard::PreemptionGuard() {
  if (g_depth.fetch_add(1) > 0) return;
  struct sigaction action {};
  action.sa_handler = on_preemption_signal;
  sigemptyset(&action.sa_mask);
  action.sa_flags = SA_RESTART;  // system calls in progress (file writes) continue
  sigaction(SIGTERM, &action, &g_previous_term);
  sigaction(SIGUSR1, &action, &g_previous_usr1);
}

PreemptionGuard::~PreemptionGuard() {
  if (g_depth.fetch_sub(1) > 1) return;
  sigaction(SIGTERM, &g_previous_term, nullptr);
  sigaction(SIGUSR1, &g_previous_usr1, nullptr);
}

int preemption_signal() { return static_cast<int>(g_signal); }
void clear_preemption() { g_signal = 0; }
bool was_preempted() { return g_preempted.load(); }
void set_preempted(bool value) { g_preempted.store(value); }

}  // namespace lmkit
