// lmkit.Tensor: a torch::Tensor held by value in a Lua full userdata.
//
// The box is created holding an undefined tensor before anything can fail, filled afterwards, and
// reset to undefined by __gc/__close (so finalizing twice is harmless). Dimensions and indices are
// 1-based in Lua and converted in bindings/tensor_index.h.
#pragma once
#include <lua.hpp>

#include <cstdint>
#include <string>
#include <vector>

#include "runtime/core/torch.h"

namespace lmkit::lua {

constexpr const char* kTensorMetatable = "lmkit.Tensor";

// The tensor at `position`; throws ArgError ("Tensor expected, got ...") otherwise.
torch::Tensor& check_tensor(lua_State* L, int position);
// The tensor at `position`, or nullptr when the value is not a tensor.
torch::Tensor* test_tensor(lua_State* L, int position);

// Pushes a new tensor box holding an undefined tensor and returns a reference to fill.
torch::Tensor& push_new_tensor(lua_State* L);
void push_tensor(lua_State* L, torch::Tensor tensor);

// A tensor, number or boolean at `position` as a tensor operand; numbers become "wrapped numbers"
// so that, as in PyTorch, `t * 2` keeps t's dtype.
torch::Tensor check_operand(lua_State* L, int position);

// Registers the metatable, the method table and the class documentation.
void open_tensor(lua_State* L);

// The method table of lmkit.Tensor (defined in lua_tensor_methods.cpp).
void push_tensor_methods(lua_State* L);
// The names registered in it, in declaration order (duplicates would show here, not in the table).
std::vector<std::string> tensor_method_names();

// Pushes a Lua value (number, boolean or nested table) with the contents of `t`.
void push_tensor_as_table(lua_State* L, const torch::Tensor& t);

}  // namespace lmkit::lua
