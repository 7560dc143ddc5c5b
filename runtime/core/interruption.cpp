#include "runtime/core/interruption.h"

#include <atomic>
#include <csignal>
#include <string>

namespace lmkit {
namespace {

// Lock-free atomics and sig_atomic_t only: request_interruption runs inside a signal handler.
std::atomic<int> g_scopes{0};
volatile std::sig_atomic_t g_requested = 0;
volatile std::sig_atomic_t g_ever_requested = 0;
static_assert(std::atomic<int>::is_always_lock_free);

}  // namespace

InterruptibleScope::InterruptibleScope() : outermost_(g_scopes.fetch_add(1) == 0) {
  if (outermost_) g_requested = 0;  // a Ctrl-C from before this work began is not for it
}

InterruptibleScope::~InterruptibleScope() {
  if (g_scopes.fetch_sub(1) == 1) g_requested = 0;
}

void InterruptibleScope::poll(const char* what) const {
  if (outermost_ && take_interruption()) throw Interrupted(std::string(what) + " interrupted (Ctrl-C)");
}

bool request_interruption() noexcept {
  if (g_scopes.load() == 0) return false;
  g_requested = 1;
  g_ever_requested = 1;
  return true;
}

bool interruption_requested() { return g_requested != 0; }

bool take_interruption() {
  const bool requested = g_requested != 0;
  g_requested = 0;
  return requested;
}

bool was_interrupted() { return g_ever_requested != 0; }

void note_lua_interruption() noexcept { g_ever_requested = 1; }

void forget_interruptions() noexcept {
  g_ever_requested = 0;
  g_requested = 0;
}

}  // namespace lmkit
