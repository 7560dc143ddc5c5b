// Lua's collector kept in step with the memory lmkit's tensors hold (the policy and the counting
// are runtime/core/tensor_memory.h; this file only runs the collector when told to).
//
// Three moments: a tensor about to reach Lua (a full collection when the tensors' bytes outgrew
// what the last one left), a Lua function that lmkit called returning (a head's forward: a young
// collection, which releases what the call made and did not return, and with it the autograd graph
// behind each intermediate), and an allocation about to fail (one full collection, then the retry).
#pragma once
#include <lua.hpp>

#include "runtime/core/torch.h"

namespace lmkit::lua {

// At luaopen_lmkit: counts host tensor memory from now on, puts the state's collector in
// generational mode (young collections are what makes the release after each call cheap:
// docs/lua-api.md, "Memory") and makes its full collection the process's reclaimer.
void open_collector(lua_State* L);

// Before `incoming` (a tensor a binding made) is pushed: a full collection if one is due. The
// tensor is not in Lua yet, so the collection cannot touch it.
void pace_collector(lua_State* L, const torch::Tensor& incoming);

// After a Lua function that lmkit called has returned and its results were taken: a young
// collection (a step in incremental mode, where a script asked for it).
void collect_after_callback(lua_State* L);

// The state's reclaimer (set by open_collector for the thread that opened lmkit, removed when the
// state closes): a full collection of the state of `L` (its main thread, a lua_State*), even where
// the script stopped the collector. Returns whether it ran.
bool collect_before_allocation_fails(void* L);

}  // namespace lmkit::lua
