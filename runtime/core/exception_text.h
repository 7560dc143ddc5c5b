// An exception's message in lmkit's words, wherever a failure reaches a person: the Lua binding's
// one exception boundary (bindings/lua_call.cpp), the command line (repl/main.cpp), the failure
// column of `lmkit doctor`, a checkpoint that cannot be read. Torch's texts are translated by whole
// classes, each once:
//   - shapes: Torch numbers dimensions, tensors in a list and list entries from 0; lmkit's tensor
//     API (runtime/tensor/tensor_methods.h, the scripts) from 1. "at non-singleton dimension 1", "except in dimension 0", "tensor number 1 in the
//     list", "at entry 0" become 1-based, and matmul's "mat1 and mat2 shapes cannot be multiplied
//     (2x3 and 2x3)" says which sizes must agree;
//   - allocation failures ("[enforce fail at alloc_cpu.cpp:75] ... you tried to allocate N bytes",
//     CUDA's "out of memory. Tried to allocate", std::bad_alloc): how much was asked, against the
//     machine's memory, and the way out;
//   - autograd misuse: backward on a value that depends on nothing that requires grad (including
//     a model whose parameters are all frozen), backward through a graph a second time.
// Any other text passes through unchanged (Torch's own message, without its C++ backtrace).
#pragma once
#include <string>

#include <exception>

namespace lmkit {

std::string torch_error_in_lmkit_words(const std::string& message);

// For std::bad_alloc, which says nothing of its size.
std::string allocation_failure_text();

// The message of a caught exception: a c10::Error without its C++ backtrace and translated as
// above, std::bad_alloc with the machine's memory, any other its what().
std::string describe_exception(std::exception_ptr error);

}  // namespace lmkit
