#include "bindings/lua_collector.h"

#include "ops/device_memory.h"
#include "runtime/core/tensor_memory.h"

namespace lmkit::lua {
namespace {

// The registry key of the sentinel whose finalizer removes the state's reclaimer.
constexpr const char* kReclaimerSentinel = "lmkit.tensor_memory_reclaimer";

// A full collection, run only where the collector may run: not while the script has stopped it
// (collectgarbage("stop") is the script's choice), and never from inside a finalizer or lua_close
// (Lua refuses: lua_gc answers -1 there).
bool full_collection(lua_State* L, bool even_if_stopped) {
  if (!even_if_stopped && lua_gc(L, LUA_GCISRUNNING) == 0) return false;
  return lua_gc(L, LUA_GCCOLLECT) == 0;
}

// Runs when the state closes (lua_close runs every finalizer): the reclaimer must not outlive it.
int clear_reclaimer(lua_State* L) {
  clear_tensor_memory_reclaimer(*static_cast<lua_State**>(lua_touserdata(L, 1)));
  return 0;
}

}  // namespace

void open_collector(lua_State* L) {
  count_host_tensor_memory();
  lua_gc(L, LUA_GCGEN, 0, 0);  // Lua's default minor and major multipliers
  // The reclaimer collects the whole state; it is given the main thread, which lives as long as the
  // state (a coroutine that opened lmkit may die first). A sentinel in the registry removes it when
  // the state closes — once per state: a second luaopen_lmkit in it must not leave an old sentinel
  // to remove the reclaimer the new one set.
  lua_rawgeti(L, LUA_REGISTRYINDEX, LUA_RIDX_MAINTHREAD);
  lua_State* main = lua_tothread(L, -1);
  lua_pop(L, 1);
  if (lua_getfield(L, LUA_REGISTRYINDEX, kReclaimerSentinel) == LUA_TNIL) {
    auto** sentinel = static_cast<lua_State**>(lua_newuserdatauv(L, sizeof(lua_State*), 0));
    *sentinel = main;
    lua_createtable(L, 0, 1);
    lua_pushcfunction(L, clear_reclaimer);
    lua_setfield(L, -2, "__gc");
    lua_setmetatable(L, -2);
    lua_setfield(L, LUA_REGISTRYINDEX, kReclaimerSentinel);
  }
  lua_pop(L, 1);
  set_tensor_memory_reclaimer(&collect_before_allocation_fails, main);
}

void pace_collector(lua_State* L, const torch::Tensor& incoming) {
  auto& host = host_collection_pacer();
  if (host.due(host_tensor_bytes())) {
    if (full_collection(L, false)) host.collected(host_tensor_bytes());
  }
  if (incoming.defined() && incoming.is_cuda()) {
    const int index = incoming.device().index();
    auto& device = device_collection_pacer();
    const auto bytes = ops::allocated_device_bytes(index);
    if (bytes >= 0 && device.due(bytes) && full_collection(L, false)) {
      device.collected(ops::allocated_device_bytes(index));
    }
  }
}

void collect_after_callback(lua_State* L) {
  if (lua_gc(L, LUA_GCISRUNNING) == 0) return;
  lua_gc(L, LUA_GCSTEP, 0);
}

bool collect_before_allocation_fails(void* L) {
  return full_collection(static_cast<lua_State*>(L), true);
}

}  // namespace lmkit::lua
