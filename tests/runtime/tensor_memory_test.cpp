// The counting allocator, the collection pacer and the reclaimer (runtime/core/tensor_memory.h):
// exact byte counts against tensors' sizes, the pacer's thresholds by hand, and the retry of an
// allocation that a reclaimer made room for, on an inner allocator with a byte budget.
#include <gtest/gtest.h>

#include <cstring>
#include <limits>
#include <string>
#include <thread>
#include <vector>

#include "runtime/core/tensor_memory.h"

namespace lmkit {
namespace {

// An allocator with a fixed budget: an allocation past it fails as Torch's CPU allocator does (a
// c10::Error), so the counting allocator's retry can be seen without exhausting the machine.
class BudgetAllocator final : public c10::Allocator {
 public:
  explicit BudgetAllocator(std::int64_t budget) : budget_(budget) {}
  c10::DataPtr allocate(std::size_t bytes) const { return take(bytes); }
  c10::DataPtr allocate(std::size_t bytes) { return take(bytes); }
  void copy_data(void* destination, const void* source, std::size_t bytes) const {
    std::memcpy(destination, source, bytes);
  }
  std::int64_t used() const { return used_; }
  std::int64_t failures() const { return failures_; }

 private:
  struct Block {
    const BudgetAllocator* owner;
    std::int64_t bytes;
    std::vector<char> memory;
  };
  c10::DataPtr take(std::size_t bytes) const {
    const auto n = static_cast<std::int64_t>(bytes);
    if (used_ + n > budget_) {
      ++failures_;
      TORCH_CHECK(false, "BudgetAllocator: out of budget");
    }
    used_ += n;
    auto* block = new Block{this, n, std::vector<char>(bytes)};
    return c10::DataPtr(block->memory.data(), block, &BudgetAllocator::give_back, c10::Device(c10::DeviceType::CPU));
  }
  static void give_back(void* context) {
    auto* block = static_cast<Block*>(context);
    block->owner->used_ -= block->bytes;
    delete block;
  }
  std::int64_t budget_;
  mutable std::int64_t used_ = 0;
  mutable std::int64_t failures_ = 0;
};

TEST(TensorMemoryTest, TheCountingAllocatorCountsWhatItHandsOutUntilItIsFreed) {
  BudgetAllocator inner(1 << 20);
  CountingAllocator counting(&inner);
  c10::Allocator& allocator = counting;
  {
    auto a = allocator.allocate(1000);
    auto b = allocator.allocate(24);
    EXPECT_EQ(counting.bytes(), 1024);
    EXPECT_EQ(inner.used(), 1024 + 2 * 64);  // each block carries its 64-byte header
    EXPECT_NE(a.get(), nullptr);
    EXPECT_EQ(a.get(), a.get_context());  // one pointer, as Torch's raw_allocate requires
    static_cast<char*>(a.get())[999] = 7;  // the memory is the inner allocation's, writable to its end
    a.clear();
    EXPECT_EQ(counting.bytes(), 24);
    EXPECT_EQ(inner.used(), 24 + 64);
    auto empty = allocator.allocate(0);  // a zero-byte block is a block too, freed like any other
    EXPECT_NE(empty.get(), nullptr);
    EXPECT_EQ(counting.bytes(), 24);
  }
  EXPECT_EQ(counting.bytes(), 0);
  EXPECT_EQ(inner.used(), 0);
  EXPECT_EQ(counting.peak(), 1024);
  counting.reset_peak();
  EXPECT_EQ(counting.peak(), 0);
}

// Torch's kernels take scratch memory with raw_allocate / raw_deallocate (gelu's, in Torch 1.13):
// it asserts that data and context are one pointer and that the allocator names its deleter.
TEST(TensorMemoryTest, RawAllocationsWorkThroughTheCountingAllocator) {
  BudgetAllocator inner(1 << 20);
  CountingAllocator counting(&inner);
  c10::Allocator& allocator = counting;
  ASSERT_NE(allocator.raw_deleter(), nullptr);
  void* scratch = allocator.raw_allocate(4096);
  EXPECT_EQ(counting.bytes(), 4096);
  std::memset(scratch, 1, 4096);
  allocator.raw_deallocate(scratch);
  EXPECT_EQ(counting.bytes(), 0);
  EXPECT_EQ(inner.used(), 0);
}

// Tensors made with the counting allocator: their storages' bytes, exactly, and views add nothing.
TEST(TensorMemoryTest, TensorsOnTheCountingAllocatorAreCountedByTheirStorages) {
  BudgetAllocator inner(1 << 24);
  CountingAllocator counting(&inner);
  {
    auto storage = c10::Storage(c10::Storage::use_byte_size_t(), 4000 * sizeof(float), &counting, /*resizable=*/true);
    auto t = torch::empty({0}, torch::kFloat32).set_(storage, 0, {4000}, {1});
    EXPECT_EQ(counting.bytes(), 16000);
    auto view = t.view({40, 100}).transpose(0, 1);
    EXPECT_EQ(counting.bytes(), 16000);
    t.fill_(1.5);
    EXPECT_FLOAT_EQ(view.sum().item<float>(), 6000.0f);
  }
  EXPECT_EQ(counting.bytes(), 0);
}

// The reclaimer set for one test and removed at its end, whatever happens.
class ScopedReclaimer {
 public:
  ScopedReclaimer(TensorMemoryReclaim reclaim, void* context) : context_(context) {
    set_tensor_memory_reclaimer(reclaim, context);
  }
  ~ScopedReclaimer() { clear_tensor_memory_reclaimer(context_); }

 private:
  void* context_;
};

struct Garbage {
  std::vector<c10::DataPtr> blocks;
  int calls = 0;
};

// What a collection of Lua's garbage does to the tensors it held.
bool free_the_garbage(void* context) {
  auto* garbage = static_cast<Garbage*>(context);
  ++garbage->calls;
  garbage->blocks.clear();
  return true;
}

TEST(TensorMemoryTest, AnAllocationThatFailsIsTriedAgainAfterTheReclaimerFreedRoom) {
  BudgetAllocator inner(1000 + 2 * 64);
  CountingAllocator counting(&inner);
  c10::Allocator& allocator = counting;
  Garbage garbage;
  garbage.blocks.push_back(allocator.allocate(600));
  ScopedReclaimer reclaimer(&free_the_garbage, &garbage);
  auto fits = allocator.allocate(700);  // 600 + 700 > 1000: fails once, reclaims, succeeds
  EXPECT_EQ(garbage.calls, 1);
  EXPECT_EQ(inner.failures(), 1);
  EXPECT_EQ(counting.bytes(), 700);
  // Past the budget even after the reclaimer: an error in Torch's words with the caller's size
  // (lmkit's messages read it), after one reclaim.
  try {
    (void)allocator.allocate(400);
    ADD_FAILURE() << "an allocation past the budget succeeded";
  } catch (const c10::Error& e) {
    EXPECT_NE(std::string(e.what()).find("can't allocate memory: you tried to allocate 400 bytes"), std::string::npos)
        << e.what();
  }
  EXPECT_EQ(garbage.calls, 2);
  EXPECT_EQ(counting.bytes(), 700);
}

TEST(TensorMemoryTest, WithoutAReclaimerAFailedAllocationFailsAtOnce) {
  BudgetAllocator inner(100);
  CountingAllocator counting(&inner);
  c10::Allocator& allocator = counting;
  EXPECT_THROW((void)allocator.allocate(101), c10::Error);
  EXPECT_EQ(inner.failures(), 1);
  EXPECT_EQ(counting.bytes(), 0);
  // A size no allocator can give, with the header added: refused before it wraps around.
  EXPECT_THROW((void)allocator.allocate(std::numeric_limits<std::size_t>::max() - 10), c10::Error);
}

struct Nested {
  int calls = 0;
  bool inner_reclaim = true;
  bool reclaiming_inside = false;
};

TEST(TensorMemoryTest, TheReclaimerRunsOnItsOwnThreadAndNeverInsideItself) {
  Nested nested;
  ScopedReclaimer reclaimer(
      [](void* c) {
        auto* n = static_cast<Nested*>(c);
        ++n->calls;
        n->reclaiming_inside = tensor_memory_reclaiming();
        n->inner_reclaim = reclaim_tensor_memory();  // an allocation failing inside it: no recursion
        return true;
      },
      &nested);
  EXPECT_FALSE(tensor_memory_reclaiming());
  EXPECT_TRUE(reclaim_tensor_memory());
  EXPECT_EQ(nested.calls, 1);
  EXPECT_TRUE(nested.reclaiming_inside);
  EXPECT_FALSE(nested.inner_reclaim);
  bool elsewhere = true;
  std::thread([&] { elsewhere = reclaim_tensor_memory(); }).join();  // another thread runs no Lua of it
  EXPECT_FALSE(elsewhere);
  EXPECT_EQ(nested.calls, 1);
  clear_tensor_memory_reclaimer(&elsewhere);  // another's context removes nothing
  EXPECT_TRUE(reclaim_tensor_memory());
  clear_tensor_memory_reclaimer(&nested);
  EXPECT_FALSE(reclaim_tensor_memory());
  EXPECT_EQ(nested.calls, 2);
}

TEST(TensorMemoryTest, ThePacerCollectsWhenBytesOutgrowTwiceWhatTheLastCollectionLeft) {
  CollectionPacer pacer(/*floor=*/100, /*growth=*/2.0);
  EXPECT_EQ(pacer.threshold(), 100);
  EXPECT_FALSE(pacer.due(100));
  EXPECT_TRUE(pacer.due(101));
  pacer.collected(30);  // little left: the floor holds
  EXPECT_EQ(pacer.threshold(), 100);
  pacer.collected(400);  // much still live: twice that before the next
  EXPECT_EQ(pacer.threshold(), 800);
  EXPECT_FALSE(pacer.due(800));
  EXPECT_TRUE(pacer.due(801));
  pacer.collected(40);  // the garbage went: back to the floor
  EXPECT_EQ(pacer.threshold(), 100);
  EXPECT_EQ(pacer.collections(), 3);
  pacer.collected(std::numeric_limits<std::int64_t>::max());  // no overflow into a negative threshold
  EXPECT_GT(pacer.threshold(), 0);
  CollectionPacer odd(-5, 0.5);  // a floor below 0 and a growth below 1 are clamped
  EXPECT_EQ(odd.floor(), 0);
  EXPECT_EQ(odd.growth(), 1.0);
}

TEST(TensorMemoryTest, TheProcessCounterSeesHostTensorsOnceInstalled) {
  count_host_tensor_memory();
  count_host_tensor_memory();  // a second call changes nothing
  ASSERT_TRUE(host_tensor_memory_counted());
  const auto before = host_tensor_bytes();
  {
    auto t = torch::empty({1000, 250}, torch::kFloat32);
    EXPECT_GE(host_tensor_bytes() - before, 1000 * 250 * 4);
    reset_peak_tensor_memory();
    auto u = torch::empty({500}, torch::kFloat64);
    EXPECT_GE(peak_host_tensor_bytes(), before + 1000 * 250 * 4 + 500 * 8);
  }
  EXPECT_EQ(host_tensor_bytes(), before);
  // A kernel with raw scratch memory (Torch 1.13's CPU gelu) through the process's allocator.
  EXPECT_GT(torch::gelu(torch::ones({4096})).sum().item<double>(), 0);
  EXPECT_EQ(host_tensor_bytes(), before);
  const auto status = tensor_memory_status();
  EXPECT_EQ(status.host, before);
#ifdef __linux__
  EXPECT_GT(status.resident, 0);
  EXPECT_GE(status.peak_resident, status.resident);
#endif
}

}  // namespace
}  // namespace lmkit
