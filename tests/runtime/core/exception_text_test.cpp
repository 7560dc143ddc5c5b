// Torch's error texts, as Torch 1.13 and 2.x write them, in lmkit's words: 1-based dimensions and
// entries, allocation failures with their size, autograd misuse with its way out.
#include "runtime/core/exception_text.h"

#include <gtest/gtest.h>

#include <exception>
#include <functional>
#include <new>
#include <stdexcept>
#include <string>

#include "runtime/core/torch.h"

namespace lmkit {
namespace {

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

TEST(TorchErrorTextTest, DimensionsAndListEntriesCountFromOne) {
  EXPECT_EQ(torch_error_in_lmkit_words("The size of tensor a (3) must match the size of tensor b (5) at non-singleton "
                                       "dimension 1"),
            "The size of tensor a (3) must match the size of tensor b (5) at non-singleton dimension 2 (dimensions and "
            "entries counted from 1)");
  EXPECT_EQ(torch_error_in_lmkit_words("Sizes of tensors must match except in dimension 0. Expected size 3 but got "
                                       "size 5 for tensor number 1 in the list."),
            "Sizes of tensors must match except in dimension 1. Expected size 3 but got size 5 for tensor 2 of the "
            "list. (dimensions and entries counted from 1)");
  EXPECT_EQ(torch_error_in_lmkit_words("stack expects each tensor to be equal size, but got [2, 3] at entry 0 and "
                                       "[4, 5] at entry 1"),
            "stack expects each tensor to be equal size, but got [2, 3] at entry 1 and [4, 5] at entry 2 (dimensions "
            "and entries counted from 1)");
  EXPECT_EQ(torch_error_in_lmkit_words("The expanded size of the tensor (2) must match the existing size (3) at "
                                       "non-singleton dimension 10.  Target sizes: [2, 3].  Tensor sizes: [3, 3]"),
            "The expanded size of the tensor (2) must match the existing size (3) at non-singleton dimension 11.  "
            "Target sizes: [2, 3].  Tensor sizes: [3, 3] (dimensions and entries counted from 1)");
}

TEST(TorchErrorTextTest, MatmulSaysWhichSizesMustAgree) {
  EXPECT_EQ(torch_error_in_lmkit_words("mat1 and mat2 shapes cannot be multiplied (2x3 and 4x5)"),
            "sizes [2, 3] and [4, 5] cannot be multiplied: the first's size 3 (its dimension 2) must equal the "
            "second's size 4 (its dimension 1)");
}

TEST(TorchErrorTextTest, TextsWithoutSizesOrDimensionsPassUnchanged) {
  for (const std::string text : {"Dimension out of range (expected to be in range of [-2, 1], but got 5)",
                                 "expected scalar type Float but found Double", "index 7 is out of bounds for dimension 0"}) {
    // The last has no "size": its dimension is left alone rather than guessed at.
    EXPECT_EQ(torch_error_in_lmkit_words(text), text);
  }
}

TEST(TorchErrorTextTest, AllocationFailuresSayHowMuchWasAskedAndKeepWhoAsked) {
  // Torch 1.13 (alloc_cpu.cpp:75) and 2.x (alloc_cpu.cpp:117) word it alike.
  for (const std::string line : {"75", "117"}) {
    const auto text = torch_error_in_lmkit_words(
        "making the head {\"K\":1000000000,\"kind\":\"mos\"}: [enforce fail at alloc_cpu.cpp:" + line +
        "] err == 0. DefaultCPUAllocator: can't allocate memory: you tried to allocate 4000000000000 bytes. Error "
        "code 12 (Cannot allocate memory)");
    EXPECT_EQ(text.rfind("making the head {\"K\":1000000000,\"kind\":\"mos\"}: out of memory: it asked for 3725.3 GiB "
                         "(4000000000000 bytes) at once, and this machine has ",
                         0),
              0u)
        << text;
    EXPECT_FALSE(contains(text, "enforce fail")) << text;
    EXPECT_TRUE(contains(text, "Use smaller sizes")) << text;
  }
  const auto gpu = torch_error_in_lmkit_words(
      "CUDA out of memory. Tried to allocate 3.64 TiB. GPU 0 has a total capacity of 79.19 GiB of which 78.6 GiB is "
      "free.");
  EXPECT_EQ(gpu.rfind("out of GPU memory: it asked for 3.64 TiB at once.", 0), 0u) << gpu;
  EXPECT_TRUE(contains(allocation_failure_text(), "out of memory: an allocation failed (this machine has "));
}

TEST(TorchErrorTextTest, AutogradMisuseNamesTheWayOut) {
  const auto nothing = torch_error_in_lmkit_words("element 0 of tensors does not require grad and does not have a grad_fn");
  EXPECT_TRUE(contains(nothing, "nothing to differentiate")) << nothing;
  EXPECT_TRUE(contains(nothing, "not all frozen")) << nothing;
  const auto twice = torch_error_in_lmkit_words(
      "Trying to backward through the graph a second time (or directly access saved tensors after they have already "
      "been freed). Saved intermediate values of the graph are freed when you call .backward() or autograd.grad(). "
      "Specify retain_graph=True if you need to backward through the graph a second time or if you need to access "
      "saved tensors after calling backward.");
  EXPECT_TRUE(contains(twice, "compute it again (a fresh forward pass) before each backward")) << twice;
  EXPECT_FALSE(contains(twice, "retain_graph=True")) << twice;  // a Python argument the Lua API does not have
}

TEST(TorchErrorTextTest, AMissingKernelForADtypeSaysWhichToConvertTo) {
  EXPECT_EQ(torch_error_in_lmkit_words("\"linalg_svd_cpu\" not implemented for 'Half'"),
            "this operation does not take float16 tensors here (Torch has no linalg_svd_cpu kernel for float16): "
            "convert first, e.g. t:float() (float32) or t:double() (float64); lmkit's analyses compute in float32 or "
            "float64.");
  EXPECT_TRUE(contains(torch_error_in_lmkit_words("\"addmm_impl_cpu_\" not implemented for 'BFloat16'"), "bfloat16"));
}

std::string described(const std::function<void()>& fail) {
  try {
    fail();
  } catch (...) {
    return describe_exception(std::current_exception());
  }
  return "";
}

TEST(TorchErrorTextTest, ACaughtExceptionIsDescribedWithoutTorchsBacktrace) {
  // A real c10::Error: its what() carries Torch's C++ backtrace, the description does not.
  const auto mismatch = described([] { (void)torch::matmul(torch::ones({2, 3}), torch::ones({4, 5})); });
  EXPECT_TRUE(contains(mismatch, "sizes [2, 3] and [4, 5] cannot be multiplied")) << mismatch;
  EXPECT_FALSE(contains(mismatch, "Exception raised from")) << mismatch;
  EXPECT_TRUE(contains(described([] { throw std::bad_alloc(); }), "out of memory: an allocation failed"));
  EXPECT_EQ(described([] { throw std::runtime_error("plain words"); }), "plain words");
  EXPECT_EQ(described([] { throw 42; }), "unknown C++ exception");
}

}  // namespace
}  // namespace lmkit
