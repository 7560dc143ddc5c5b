// What a file makes lmkit build is bounded by the file's size: a few hundred bytes of pickle cannot
// ask for gigabytes (a memoized string doubled by STACK_GLOBAL; millions of NONE opcodes), in
// listing and in reading alike, and tensors that are views of one storage are read as views of
// one storage. Files written byte by byte here.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include "runtime/core/atomic_file.h"
#include "runtime/core/error.h"
#include "runtime/tensor_files/tensor_file.h"
#include "runtime/tensor_files/torch_pickle.h"
#include "runtime/tensor_files/zip_archive.h"
#include "tests/support/failure_text.h"
#include "tests/support/temporary_folder.h"

namespace lmkit {
namespace {

using testing::contains;
using testing::failure;

// Pickle opcodes (protocol 2), written by hand.
struct Pickle {
  std::string bytes = "\x80\x02";
  Pickle& op(char code) {
    bytes += code;
    return *this;
  }
  Pickle& u32(std::uint32_t value) {
    for (int i = 0; i < 4; ++i) bytes += static_cast<char>((value >> (8 * i)) & 0xFFu);
    return *this;
  }
  Pickle& text(const std::string& value) {
    op('X').u32(static_cast<std::uint32_t>(value.size()));
    bytes += value;
    return *this;
  }
  Pickle& integer(std::uint32_t value) { return op('J').u32(value); }
  Pickle& global(const std::string& module, const std::string& name) {
    bytes += 'c' + module + '\n' + name + '\n';
    return *this;
  }
  Pickle& put(std::uint32_t key) { return op('r').u32(key); }
  Pickle& get(std::uint32_t key) { return op('j').u32(key); }
};

class FileBuildBudgetTest : public testing::TemporaryFolderTest {
 protected:
  FileBuildBudgetTest() : TemporaryFolderTest("lmkit_file_build_budget_", /*create=*/true) {}
  // A torch.save archive holding `pickle` as its data.pkl and the storages given.
  std::string torch_save(const std::string& name, const Pickle& pickle,
                         std::vector<std::pair<std::string, std::string>> storages = {}) {
    storages.insert(storages.begin(), {"archive/data.pkl", pickle.bytes});
    const auto path = dir(name);
    write_file_atomically(path, tensor_files::stored_zip(storages));
    return path;
  }
};

TEST_F(FileBuildBudgetTest, TheBudgetIsProportionalToTheFileWithAFloorAndACap) {
  EXPECT_EQ(tensor_files::build_budget(0), std::uint64_t{64} << 20);
  EXPECT_EQ(tensor_files::build_budget(1000), (std::uint64_t{64} << 20) + 64'000);
  EXPECT_EQ(tensor_files::build_budget(std::uint64_t{1} << 40), std::uint64_t{4} << 30);
  EXPECT_EQ(tensor_files::build_budget(UINT64_MAX), std::uint64_t{4} << 30);
}

TEST_F(FileBuildBudgetTest, AMemoizedStringDoubledAgainAndAgainIsRefusedInListingAndReading) {
  // "a", then 27 times: get it twice, join them (STACK_GLOBAL: "module.name"), memoize the result:
  // 2^27 characters (and as many again in the values left on the stack) from 250 bytes of pickle.
  Pickle pickle;
  pickle.text("a").put(0);
  for (int i = 0; i < 27; ++i) pickle.get(0).get(0).op('\x93').put(0);
  pickle.op('}').op('.');
  const auto path = torch_save("doubling.pt", pickle);
  for (const auto& text : {failure([&] { tensor_file_contents(path); }), failure([&] { read_tensor_file(path, {}); })}) {
    EXPECT_TRUE(contains(text, "torch.save file '" + path + "': its pickle (data.pkl) builds more than 67")) << text;
    EXPECT_TRUE(contains(text, "bytes of file")) << text;
  }
}

TEST_F(FileBuildBudgetTest, MillionsOfSmallValuesAreRefused) {
  // Three million NONE opcodes: ~1 GB of values from 3 MB of file.
  Pickle pickle;
  pickle.bytes.append(3'000'000, 'N');
  pickle.op('.');
  const auto path = torch_save("nones.pt", pickle);
  const auto text = failure([&] { tensor_file_contents(path); });
  EXPECT_TRUE(contains(text, "its pickle (data.pkl) builds more than")) << text;
}

TEST_F(FileBuildBudgetTest, ViewsOfOneStorageAreReadAsViewsOfOneStorage) {
  // 200 tensors over one storage of 250,000 float32 (1 MB), each covering all of it but its first
  // i elements: read as copies they would take 200 MB.
  constexpr std::uint32_t kNumel = 250'000, kViews = 200;
  std::string storage(kNumel * 4, '\0');
  for (std::uint32_t i = 0; i < kNumel; ++i) {
    const float value = static_cast<float>(i);
    std::memcpy(&storage[4 * i], &value, 4);
  }
  Pickle pickle;
  pickle.op('}').op('(');
  for (std::uint32_t i = 0; i < kViews; ++i) {
    pickle.text("t" + std::to_string(i)).global("torch._utils", "_rebuild_tensor_v2").op('(');
    if (i == 0) {
      pickle.op('(').text("storage").global("torch", "FloatStorage").text("0").text("cpu").integer(kNumel).op('t').op('Q').put(1);
    } else {
      pickle.get(1);
    }
    pickle.integer(i).op('(').integer(kNumel - i).op('t').op('(').integer(1).op('t').op('\x89');
    pickle.global("collections", "OrderedDict").op(')').op('R').op('t').op('R');
  }
  pickle.op('u').op('.');
  const auto path = torch_save("views.pt", pickle, {{"archive/data/0", storage}});
  const auto tensors = read_tensor_file(path, {});
  ASSERT_EQ(tensors.size(), kViews);
  const auto* data = tensors.at("t0").storage().data_ptr().get();
  for (std::uint32_t i = 0; i < kViews; ++i) {
    const auto& t = tensors.at("t" + std::to_string(i));
    EXPECT_EQ(t.storage().data_ptr().get(), data) << "t" << i << " is a copy, not a view of the one storage";
    EXPECT_EQ(t.size(0), kNumel - i);
    EXPECT_EQ(t[0].item<float>(), static_cast<float>(i));
    EXPECT_EQ(t[-1].item<float>(), static_cast<float>(kNumel - 1));
  }
  EXPECT_EQ(tensors.at("t0").storage().nbytes(), std::size_t{kNumel} * 4);
}

}  // namespace
}  // namespace lmkit
