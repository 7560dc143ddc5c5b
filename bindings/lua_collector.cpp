#include "bindings/lua_collector.h"

#include "ops/device_memory.h"
#include "runtime/core/tensor_memory.h"

namespace lmkit::lua {
namespace {

// A full collection, run only where the collector may run: not while the script has stopped it
// (collectgarbage("stop") is the script's choice), and never from inside a finalizer (Lua refuses:
// lua_gc answers -1 there).
bool full_collection(lua_State* L, bool even_if_stopped) {
  if (!even_if_stopped && lua_gc(L, LUA_GCISRUNNING) == 0) return false;
  return lua_gc(L, LUA_GCCOLLECT) == 0;
}

}  // namespace

void open_collector(lua_State* L) {
  count_host_tensor_memory();
  lua_gc(L, LUA_GCGEN, 0, 0);  // Lua's default minor and major multipliers
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
