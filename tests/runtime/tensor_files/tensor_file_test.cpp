// Tensor files written by NumPy, PyTorch and safetensors' layout (fixtures made by
// files/make_tensor_files.py), lmkit's own writing read back, and damaged files of every kind
// refused with the file and the entry named.
#include "runtime/tensor_files/tensor_file.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <random>
#include <string>

#include "runtime/core/atomic_file.h"
#include "runtime/core/error.h"
#include "runtime/core/mapped_file.h"
#include "runtime/tensor/tensor_format.h"
#include "runtime/tensor_files/zip_archive.h"
#include "tests/support/failure_text.h"
#include "tests/support/legacy_torch_save.h"
#include "tests/support/source_tree.h"
#include "tests/support/temporary_folder.h"

namespace lmkit {
namespace {

std::string fixture(const std::string& name) {
  return testing::source_tree_path("tests/runtime/tensor_files/files/" + name).string();
}

// arange(n) in the stored dtype, as the fixture script writes every array (bool: i % 2 == 1).
torch::Tensor expected(torch::IntArrayRef shape, torch::ScalarType dtype) {
  std::int64_t n = 1;
  for (const auto s : shape) n *= s;
  auto values = torch::arange(n, torch::kFloat64).reshape(shape);
  if (dtype == torch::kBool) return torch::remainder(values, 2).eq(1);
  return values.to(dtype);
}

using testing::contains;
using testing::failure;
using testing::kLegacyMagic;
using testing::legacy_facts;
using testing::legacy_keys;
using testing::legacy_module;
using testing::legacy_tensor;
using testing::legacy_object;
using testing::legacy_protocol;
using testing::legacy_storage;

class TensorFileTest : public testing::TemporaryFolderTest {
 protected:
  TensorFileTest() : TemporaryFolderTest("lmkit_tensor_file_", /*create=*/true) {}
  // A copy of `bytes` as a file of this test.
  std::string file(const std::string& name, const std::string& bytes) {
    const auto path = dir(name);
    write_file_atomically(path, bytes);
    return path;
  }
};

const std::vector<std::tuple<std::string, std::vector<std::int64_t>, torch::ScalarType>> kNumpyArrays = {
    {"f64", {2, 3}, torch::kFloat64}, {"f32", {2, 3, 4}, torch::kFloat32}, {"f16", {5}, torch::kFloat16},
    {"i64", {3, 2}, torch::kInt64},   {"i32", {4}, torch::kInt32},         {"i16", {4}, torch::kInt16},
    {"i8", {4}, torch::kInt8},        {"u8", {4}, torch::kUInt8},          {"b", {4}, torch::kBool},
    {"empty", {0, 3}, torch::kFloat32}};

void expect_numpy_arrays(const std::map<std::string, torch::Tensor>& tensors, const std::string& file) {
  for (const auto& [name, shape, dtype] : kNumpyArrays) {
    ASSERT_TRUE(tensors.count(name)) << file << ": " << name;
    const auto& t = tensors.at(name);
    EXPECT_EQ(t.scalar_type(), dtype) << file << ": " << name;
    EXPECT_TRUE(torch::equal(t, expected(shape, dtype))) << file << ": " << name << "\n" << t;
  }
  ASSERT_TRUE(tensors.count("scalar")) << file;
  EXPECT_EQ(tensors.at("scalar").dim(), 0);
  EXPECT_EQ(tensors.at("scalar").item<float>(), 7.0f);
}

TEST_F(TensorFileTest, NumpysFilesReadAsNumpyWroteThem) {
  for (const auto* name : {"all.npz", "all_compressed.npz"}) {
    expect_numpy_arrays(read_tensor_file(fixture(name), {}), name);
  }
  const auto c_order = read_tensor_file(fixture("f32_c.npy"), {});
  ASSERT_EQ(c_order.size(), 1u);
  EXPECT_TRUE(torch::equal(c_order.at("f32_c"), expected({2, 3, 4}, torch::kFloat32)));
  // Fortran order: the same values at the same indices, laid out column-major in the file.
  const auto fortran = read_tensor_file(fixture("f64_fortran.npy"), {}).at("f64_fortran");
  EXPECT_TRUE(fortran.is_contiguous());
  EXPECT_TRUE(torch::equal(fortran, expected({2, 3, 4}, torch::kFloat64)));
  EXPECT_TRUE(contains(failure([] { read_tensor_file(fixture("f32_bigendian.npy"), {}); }), "big-endian"));
}

TEST_F(TensorFileTest, SafetensorsAndTorchSaveReadWithEveryDtype) {
  const auto all = read_tensor_file(fixture("all.safetensors"), {});
  expect_numpy_arrays(all, "all.safetensors");
  EXPECT_EQ(all.at("bf16").scalar_type(), torch::kBFloat16);
  EXPECT_TRUE(torch::equal(all.at("bf16").to(torch::kFloat32), torch::arange(3, torch::kFloat32)));
  const auto state = read_tensor_file(fixture("state.pt"), {});
  EXPECT_TRUE(torch::equal(state.at("weight"), expected({2, 3}, torch::kFloat32)));
  EXPECT_EQ(state.at("bias").scalar_type(), torch::kBFloat16);
  EXPECT_TRUE(torch::equal(state.at("ids"), expected({3}, torch::kInt64)));
  EXPECT_TRUE(torch::equal(state.at("block.scale"), expected({4}, torch::kFloat16)));  // nested dicts joined by dots
  // A whole nn.Module saved with torch.save(model): its parameters and buffers under their state_dict
  // names, and not its other attributes.
  const auto module = read_tensor_file(fixture("whole_module.pt"), {});
  std::vector<std::string> names;
  for (const auto& [name, tensor] : module) names.push_back(name);
  EXPECT_EQ(names, (std::vector<std::string>{"0.bias", "0.weight", "1.bias", "1.num_batches_tracked", "1.running_mean",
                                              "1.running_var", "1.weight"}));
  EXPECT_TRUE(torch::equal(module.at("0.weight"), expected({2, 3}, torch::kFloat32)));
  EXPECT_TRUE(torch::equal(module.at("0.bias"), expected({2}, torch::kFloat32)));
}

// The legacy format (PyTorch < 1.6; _use_new_zipfile_serialization=False), as PyTorch wrote it
// (make_tensor_files.py): the same tensors as the zip format's file of the same state.
TEST_F(TensorFileTest, LegacyTorchSaveReadsAsTheZipFormat) {
  const auto zip = read_tensor_file(fixture("state.pt"), {});
  const auto legacy = read_tensor_file(fixture("state_legacy.pt"), {});
  ASSERT_EQ(legacy.size(), zip.size());
  for (const auto& [name, tensor] : zip) {
    ASSERT_TRUE(legacy.count(name)) << name;
    EXPECT_EQ(legacy.at(name).scalar_type(), tensor.scalar_type()) << name;
    EXPECT_TRUE(torch::equal(legacy.at(name), tensor)) << name;
  }
  const auto contents = tensor_file_contents(fixture("state_legacy.pt"));
  ASSERT_EQ(contents.size(), 4u);
  EXPECT_EQ(contents.front().name, "weight");
  EXPECT_EQ(contents.front().bytes, 24);
}

TEST_F(TensorFileTest, HandMadeLegacyFilesReadAndDamagedOnesAreRefused) {
  const auto head = kLegacyMagic + legacy_protocol(1001) + legacy_facts(true);
  // Two tensors on two storages, listed in the other order than the pickle uses them.
  const auto good = file("good.pt", head + legacy_object({{"a", "k1", 3}, {"b", "k2", 2}}) + legacy_keys({"k2", "k1"}) +
                                        legacy_storage(2, 2) + legacy_storage(3, 3));
  const auto tensors = read_tensor_file(good, {});
  ASSERT_EQ(tensors.size(), 2u);
  EXPECT_TRUE(torch::equal(tensors.at("a"), torch::arange(3, torch::kFloat32)));
  EXPECT_TRUE(torch::equal(tensors.at("b"), torch::arange(2, torch::kFloat32)));

  // torch.save's pickle_protocol 3 and 4 (a FRAME before the magic number) begin the same file.
  const auto rest = read_file(good).substr(kLegacyMagic.size());
  auto protocol3 = kLegacyMagic;
  protocol3[1] = '\x03';
  EXPECT_EQ(read_tensor_file(file("protocol3.pt", protocol3 + rest), {}).size(), 2u);
  const auto protocol4 = std::string("\x80\x04\x95", 3) + testing::le_bytes(13, 8) + kLegacyMagic.substr(2);
  EXPECT_EQ(read_tensor_file(file("protocol4.pt", protocol4 + rest), {}).size(), 2u);

  const auto refusal = [&](const std::string& name, const std::string& bytes) {
    return failure([&] { read_tensor_file(file(name, bytes), {}); });
  };
  const auto object = legacy_object({{"a", "k1", 3}});
  EXPECT_TRUE(contains(refusal("count.pt", head + object + legacy_keys({"k1"}) + legacy_storage(std::uint64_t{1} << 61, 3)),
                       "the storage 'k1' claims 2305843009213693952 elements of 4 bytes, and 12 bytes are left"));
  EXPECT_TRUE(contains(refusal("twice.pt", head + object + legacy_keys({"k1", "k1"}) + legacy_storage(3, 3) + legacy_storage(3, 3)),
                       "names 'k1' twice"));
  EXPECT_TRUE(contains(refusal("unused.pt", head + object + legacy_keys({"k1", "k9"}) + legacy_storage(3, 3) + legacy_storage(1, 1)),
                       "names 'k9', which its pickle does not use"));
  EXPECT_TRUE(contains(refusal("unlisted.pt", head + legacy_object({{"a", "k1", 3}, {"b", "k2", 2}}) + legacy_keys({"k1"}) +
                                                  legacy_storage(3, 3)),
                       "uses the storage 'k2', which the file does not hold"));
  EXPECT_TRUE(contains(refusal("big.pt", kLegacyMagic + legacy_protocol(1001) + legacy_facts(false) + object +
                                             legacy_keys({"k1"}) + legacy_storage(3, 3)),
                       "big-endian"));
  EXPECT_TRUE(contains(refusal("protocol.pt", kLegacyMagic + legacy_protocol(1000) + legacy_facts(true) + object +
                                                  legacy_keys({"k1"}) + legacy_storage(3, 3)),
                       "protocol version 1000"));
  // A storage shorter than its tensor.
  EXPECT_TRUE(contains(refusal("short.pt", head + object + legacy_keys({"k1"}) + legacy_storage(2, 2)), "reach past its storage"));

  // A whole model (torch.save(model), as finetune.py and the MoS code save): its classes are named
  // by ('module', class, file, source) persistent ids, whose source is neither run nor kept.
  const auto inner = legacy_module("model", "Decoder", {{"weight", legacy_tensor("k2", 2)}}, {});
  const auto model = file("model.pt", head + "\x80\x02" + legacy_module("model", "RNNModel", {{"scale", legacy_tensor("k1", 3)}},
                                                                       {{"decoder", inner}}) +
                                          "." + legacy_keys({"k1", "k2"}) + legacy_storage(3, 3) + legacy_storage(2, 2));
  const auto whole = read_tensor_file(model, {});
  ASSERT_EQ(whole.size(), 2u);
  EXPECT_TRUE(torch::equal(whole.at("scale"), torch::arange(3, torch::kFloat32)));
  EXPECT_TRUE(torch::equal(whole.at("decoder.weight"), torch::arange(2, torch::kFloat32)));

  // Cut anywhere, the file is refused, in lmkit's words.
  const auto good_bytes = read_file(good);
  for (std::size_t length = 0; length < good_bytes.size(); ++length) {
    const auto path = file("cut.pt", good_bytes.substr(0, length));
    try {
      read_tensor_file(path, {});
      ADD_FAILURE() << "a legacy file cut to " << length << " bytes was read";
    } catch (const EnvironmentError&) {
    } catch (const std::exception& e) {
      ADD_FAILURE() << "a legacy file cut to " << length << " bytes: not lmkit's refusal: " << e.what();
    }
  }
}

TEST_F(TensorFileTest, ListingReadsHeadersAndConversionIsOnRequest) {
  const auto contents = tensor_file_contents(fixture("all.safetensors"));
  ASSERT_EQ(contents.size(), 12u);
  EXPECT_EQ(contents.front().name, "f64");  // in the order of the data
  EXPECT_EQ(contents.front().dtype, "float64");
  EXPECT_EQ(contents.front().shape, (std::vector<std::int64_t>{2, 3}));
  EXPECT_EQ(contents.front().bytes, 48);
  EXPECT_EQ(tensor_file_contents(fixture("all_compressed.npz")).size(), 11u);
  ReadTensorsOptions some;
  some.names = {"bf16", "i8"};
  some.dtype = "float32";
  const auto converted = read_tensor_file(fixture("all.safetensors"), some);
  ASSERT_EQ(converted.size(), 2u);
  EXPECT_EQ(converted.at("bf16").scalar_type(), torch::kFloat32);
  EXPECT_EQ(converted.at("i8").scalar_type(), torch::kFloat32);
  some.names = {"bf1"};
  EXPECT_TRUE(contains(failure([&] { read_tensor_file(fixture("all.safetensors"), some); }), "did you mean 'bf16'"));
}

TEST_F(TensorFileTest, WrittenFilesReadBackInEveryFormat) {
  std::map<std::string, torch::Tensor> tensors;
  for (const auto dtype : {torch::kFloat64, torch::kFloat32, torch::kFloat16, torch::kInt64, torch::kInt32, torch::kInt16,
                           torch::kInt8, torch::kUInt8, torch::kBool}) {
    tensors[dtype_name(dtype)] = expected({3, 2}, dtype);
  }
  tensors["scalar"] = torch::tensor(2.5);
  tensors["empty"] = torch::zeros({0, 4});
  tensors["transposed"] = expected({3, 4}, torch::kFloat32).t();  // not contiguous: written in its logical order
  for (const auto* name : {"w.safetensors", "w.npz", "w.pt"}) {
    const auto path = dir(name);
    write_tensor_file(path, tensors, {});
    const auto back = read_tensor_file(path, {});
    ASSERT_EQ(back.size(), tensors.size()) << name;
    for (const auto& [key, tensor] : tensors) {
      EXPECT_TRUE(torch::equal(back.at(key), tensor)) << name << ": " << key;
      EXPECT_EQ(back.at(key).scalar_type(), tensor.scalar_type()) << name << ": " << key;
    }
  }
  std::map<std::string, torch::Tensor> bf16 = {{"x", torch::arange(4, torch::kFloat32).to(torch::kBFloat16)}};
  write_tensor_file(dir("b.safetensors"), bf16, {});
  EXPECT_TRUE(torch::equal(read_tensor_file(dir("b.safetensors"), {}).at("x"), bf16.at("x")));
  EXPECT_TRUE(contains(failure([&] { write_tensor_file(dir("b.npz"), bf16, {}); }), "NumPy has no type for"));
  write_tensor_file(dir("one.npy"), {{"ignored", expected({2, 2}, torch::kInt64)}}, {});
  EXPECT_TRUE(torch::equal(read_tensor_file(dir("one.npy"), {}).at("one"), expected({2, 2}, torch::kInt64)));
  EXPECT_TRUE(contains(failure([&] { write_tensor_file(dir("two.npy"), tensors, {}); }), "holds one array"));
  EXPECT_TRUE(contains(failure([&] { write_tensor_file(dir("x.txt"), tensors, {}); }), "no extension that names a format"));
  WriteTensorsOptions as_npz;
  as_npz.format = "npz";
  write_tensor_file(dir("x.data"), tensors, as_npz);
  EXPECT_EQ(read_tensor_file(dir("x.data"), {}).size(), tensors.size());
}

// A safetensors image from a header text and data bytes.
std::string safetensors(const std::string& header, const std::string& data) {
  std::string image(8, '\0');
  for (int i = 0; i < 8; ++i) image[static_cast<std::size_t>(i)] = static_cast<char>((header.size() >> (8 * i)) & 0xFF);
  return image + header + data;
}

TEST_F(TensorFileTest, DamagedSafetensorsHeadersAreRefusedWithTheEntryNamed) {
  const std::string eight(8, '\0');
  const std::vector<std::pair<std::string, std::string>> cases = {
      {safetensors(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})", eight.substr(0, 4)), "past the end of the file"},
      {safetensors(R"({"a":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}})", eight), "needs 12"},
      {safetensors(R"({"a":{"dtype":"F8_E4M3","shape":[8],"data_offsets":[0,8]}})", eight), "is not one lmkit reads"},
      {safetensors(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"b":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})", eight),
       "share bytes"},
      {safetensors(R"({"a":{"dtype":"F32","shape":[-2],"data_offsets":[0,8]}})", eight), "non-negative integer"},
      {safetensors(R"({"a":{"dtype":"F32","shape":[2500000000,2000000000,4],"data_offsets":[0,8]}})", eight), "past 2^63"},
      {safetensors(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,10000000000]}})", eight), "hold 10000000000 bytes"},
      {safetensors(R"({"a":{"dtype":"F32","shape":[2]}})", eight), "dtype, shape and data_offsets"},
      {safetensors("{\"\xff\xfe\":{}}", eight), "not valid JSON"},
      {safetensors(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})", eight).substr(0, 30), "truncated"},
  };
  for (std::size_t i = 0; i < cases.size(); ++i) {
    const auto path = file("case" + std::to_string(i) + ".safetensors", cases[i].first);
    const auto text = failure([&] { read_tensor_file(path, {}); });
    EXPECT_TRUE(contains(text, cases[i].second)) << "case " << i << ": " << text;
    EXPECT_TRUE(contains(text, path)) << "case " << i << ": " << text;
  }
  // A shape with a 0 whose other sizes overflow Torch's strides; a dtype nested 100,000 deep (its
  // message must not recurse through it); a bool byte that is neither 0 nor 1 (read as true).
  const auto zero_but_huge = file("zero.safetensors",
      safetensors(R"({"a":{"dtype":"U8","shape":[0,4611686018427387904,4611686018427387904],"data_offsets":[0,0]}})", ""));
  EXPECT_TRUE(contains(failure([&] { read_tensor_file(zero_but_huge, {}); }), "past 2^63"));
  const auto nested = file("nested.safetensors", safetensors(R"({"a":{"dtype":)" + std::string(100000, '[') +
                                                                 std::string(100000, ']') + R"(,"shape":[],"data_offsets":[0,0]}})", ""));
  EXPECT_TRUE(contains(failure([&] { read_tensor_file(nested, {}); }), "dtype a JSON array is not one lmkit reads"));
  const auto two = file("two.safetensors", safetensors(R"({"b":{"dtype":"BOOL","shape":[2],"data_offsets":[0,2]}})", std::string("\x02\x00", 2)));
  EXPECT_TRUE(torch::equal(read_tensor_file(two, {}).at("b"), torch::tensor({true, false})));
  // A named pipe is refused, not waited on.
  const auto pipe = dir("pipe.npz");
  ASSERT_EQ(::mkfifo(pipe.c_str(), 0600), 0);
  EXPECT_TRUE(contains(failure([&] { read_tensor_file(pipe, {}); }), "not a regular file"));
  // A header length of 10 GB in a small file: refused before anything is allocated.
  auto huge = safetensors("{}", "");
  huge[4] = 2;
  const auto path = file("huge.safetensors", huge);
  EXPECT_FALSE(contains(failure([&] { read_tensor_file(path, {}); }), "(no error)"));
}

TEST_F(TensorFileTest, DamagedNumpyAndZipFilesAreRefused) {
  const auto npy = [](const std::string& header, std::size_t data_bytes) {
    std::string image("\x93NUMPY\x01\x00", 8);
    image += static_cast<char>(header.size() & 0xFF);
    image += static_cast<char>(header.size() >> 8);
    return image + header + std::string(data_bytes, '\0');
  };
  const std::vector<std::pair<std::string, std::string>> cases = {
      {npy("{'descr': '<f4', 'fortran_order': False, 'shape': (3,), }", 8), "truncated"},
      {npy("{'descr': '<f4', 'fortran_order': False, 'shape': (1,), }", 8), "bytes after the array"},
      {npy("{'descr': '<c8', 'fortran_order': False, 'shape': (1,), }", 8), "'<c8' is not one lmkit reads"},
      {npy("{'descr': '<f4', 'fortran_order': False, 'shape': (99999999999999999999,), }", 8), "does not fit 63 bits"},
      {npy("{'descr': '<f4', 'shape': (2,), }", 8), "descr, fortran_order and shape are all needed"},
      {npy("{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (2,), }", 8), "not one NumPy writes"},
      {npy("{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }", 8).substr(0, 20), "truncated inside its .npy header"},
      {std::string("PK\x03\x04", 4) + std::string(40, '\0'), "no zip directory"},
      {std::string("garbage that is no format at all"), "not a format lmkit reads"},
  };
  for (std::size_t i = 0; i < cases.size(); ++i) {
    const auto path = file("case" + std::to_string(i) + ".npy", cases[i].first);
    const auto text = failure([&] { read_tensor_file(path, {}); });
    EXPECT_TRUE(contains(text, cases[i].second)) << "case " << i << ": " << text;
  }
  // Two directory entries pointing at one member's bytes: refused (a small file would otherwise read
  // as any number of copies of one large member).
  auto archive = tensor_files::stored_zip({{"a.npy", std::string(64, 'x')}});
  const auto directory_at = static_cast<std::size_t>(static_cast<unsigned char>(archive[archive.size() - 6]) |
                                                     (static_cast<unsigned char>(archive[archive.size() - 5]) << 8));
  auto entry = archive.substr(directory_at, 46 + 5);
  entry[46] = 'b';
  auto end = archive.substr(archive.size() - 22);
  end[8] = end[10] = 2;             // members on this disk and in all
  end[12] = static_cast<char>(2 * entry.size());  // the directory's size (< 256 here)
  archive = archive.substr(0, archive.size() - 22) + entry + end;
  EXPECT_TRUE(contains(failure([&] { read_tensor_file(file("twice.npz", archive), {}); }), "share bytes"));
  // A real .npz cut short, and one whose deflated member claims 10 GB.
  const auto whole = read_file(fixture("all_compressed.npz"));
  const auto cut = file("cut.npz", whole.substr(0, whole.size() / 2));
  EXPECT_TRUE(contains(failure([&] { read_tensor_file(cut, {}); }), "no zip directory"));
  EXPECT_TRUE(contains(failure([&] { read_tensor_file(dir("missing.npz"), {}); }), "missing.npz"));
}

}  // namespace
}  // namespace lmkit

namespace lmkit {
namespace {

// Integrity (the file says what it holds exactly once, and the bytes are the ones written): a zip
// member whose bytes do not match its CRC-32 (one flipped byte inside an .npz's data: NumPy says "Bad
// CRC-32"); an entry named twice (a safetensors header, an .npz, a torch.save pickle's dict); a name
// with a NUL, read or written.
TEST_F(TensorFileTest, DamagedBytesDuplicatesAndNulNamesAreRefused) {
  // A flipped byte in the data of a stored member, and of a real NumPy file's member.
  const auto good = torch::tensor({1.0F, 2.0F, 3.0F, 4.0F});
  write_tensor_file(dir("good.npz"), {{"x", good}}, {});
  auto bytes = read_file(dir("good.npz"));
  EXPECT_TRUE(torch::equal(read_tensor_file(file("copy.npz", bytes), {}).at("x"), good));
  const auto data_at = bytes.find(std::string("\x00\x00\x80\x3f", 4));  // 1.0F
  ASSERT_NE(data_at, std::string::npos);
  bytes[data_at] = '\x10';  // 1.0000076F: a plausible number, so only the CRC can tell
  const auto flipped = file("flipped.npz", bytes);
  const auto text = failure([&] { read_tensor_file(flipped, {}); });
  EXPECT_TRUE(contains(text, "CRC-32")) << text;
  EXPECT_TRUE(contains(text, "member 'x.npy'")) << text;
  EXPECT_TRUE(contains(text, flipped)) << text;
  EXPECT_EQ(tensor_file_contents(flipped).size(), 1u);  // listing reads the header only
  auto numpy = read_file(fixture("all.npz"));
  numpy[232] ^= 0x01;  // the last byte of its first member's data (f64.npy: bytes 57 to 232)
  EXPECT_THROW(read_tensor_file(file("numpy_flipped.npz", numpy), {}), EnvironmentError);
  auto compressed = read_file(fixture("all_compressed.npz"));
  bool refused_or_read = true;
  try {
    compressed[100] ^= 0x01;  // inside its first member's deflated data (bytes 57 to 143)
    read_tensor_file(file("compressed_flipped.npz", compressed), {});
    refused_or_read = false;  // a flipped deflated byte must not inflate to other numbers silently
  } catch (const EnvironmentError&) {
  }
  EXPECT_TRUE(refused_or_read);
  // Entries named twice.
  const std::string eight(8, '\0');
  const auto header_twice = file("twice.safetensors",
      safetensors(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},"a":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})", eight));
  EXPECT_TRUE(contains(failure([&] { read_tensor_file(header_twice, {}); }), "names the entry 'a' twice"));
  EXPECT_TRUE(contains(failure([&] { tensor_file_contents(header_twice); }), "twice"));
  const auto archive = tensor_files::stored_zip({{"x.npy", std::string()}, {"x.npy", std::string()}});
  const auto members_twice = failure([&] { read_tensor_file(file("members_twice.npz", archive), {}); });
  EXPECT_TRUE(contains(members_twice, "member 'x.npy' twice")) << members_twice;
  // A torch.save pickle whose dict names "weight" twice (its "bias" key renamed; the archive rebuilt
  // with correct CRCs, so that only the pickle is at fault).
  const MappedFile state(fixture("state.pt"));
  std::vector<std::pair<std::string, std::string>> members;
  for (const auto& m : tensor_files::zip_members(state.span())) {
    std::string buffer;
    auto content = std::string(tensor_files::member_bytes(m, buffer, m.name));
    if (m.name.size() >= 8 && m.name.compare(m.name.size() - 8, 8, "data.pkl") == 0) {
      const std::string bias("X\x04\x00\x00\x00" "bias", 9), weight("X\x06\x00\x00\x00" "weight", 11);
      const auto at = content.find(bias);
      ASSERT_NE(at, std::string::npos);
      content.replace(at, bias.size(), weight);
    }
    members.emplace_back(m.name, content);
  }
  const auto pickle_twice = file("twice.pt", tensor_files::stored_zip(members));
  const auto pickle_text = failure([&] { read_tensor_file(pickle_twice, {}); });
  EXPECT_TRUE(contains(pickle_text, "names the tensor 'weight' twice")) << pickle_text;
  // Names with a NUL: refused when written (before anything is written) and when read.
  const auto nul_name = std::string("w\0a", 3);
  EXPECT_TRUE(contains(failure([&] { write_tensor_file(dir("nul.safetensors"), {{nul_name, good}, {std::string("w\0b", 3), good}}, {}); }),
                       "'w\\x00a' holds a NUL byte"));
  EXPECT_FALSE(std::filesystem::exists(dir("nul.safetensors")));
  EXPECT_TRUE(contains(failure([&] { write_tensor_file(dir("empty.npz"), {{"", good}}, {}); }), "not empty"));
  const auto nul_header = file("nul.safetensors", safetensors(R"({"w\u0000a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}})", eight.substr(0, 4)));
  EXPECT_TRUE(contains(failure([&] { read_tensor_file(nul_header, {}); }), "holds a NUL byte"));
  const auto empty_name = file("empty.safetensors", safetensors(R"({"":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}})", eight.substr(0, 4)));
  EXPECT_TRUE(contains(failure([&] { read_tensor_file(empty_name, {}); }), "empty name"));
}

// Every fixture cut short at random points and with random bytes changed: each read either gives
// tensors or an error lmkit names — never a crash, a hang or a read outside the file (the ASan run
// checks the last). Fixed seeds: the same cases on every run.
TEST_F(TensorFileTest, DamagedCopiesOfEveryFixtureFailCleanly) {
  std::mt19937 random(20261126);
  int refused = 0, read = 0;
  for (const auto* name : {"all.safetensors", "all.npz", "all_compressed.npz", "f64_fortran.npy", "state.pt", "state_legacy.pt"}) {
    const auto whole = read_file(fixture(name));
    for (int round = 0; round < 60; ++round) {
      auto damaged = whole;
      if (round % 3 == 0) {
        damaged.resize(std::uniform_int_distribution<std::size_t>(0, whole.size() - 1)(random));
      } else {
        const int flips = 1 + round % 4;
        for (int k = 0; k < flips; ++k) {
          damaged[std::uniform_int_distribution<std::size_t>(0, whole.size() - 1)(random)] =
              static_cast<char>(std::uniform_int_distribution<int>(0, 255)(random));
        }
      }
      const auto path = file(std::string("damaged_") + std::to_string(round) + "_" + name, damaged);
      try {
        for (const auto& [key, tensor] : read_tensor_file(path, {})) EXPECT_TRUE(tensor.defined()) << key;
        ++read;
      } catch (const EnvironmentError&) {
        ++refused;
      } catch (const UsageError&) {
        ++refused;
      }
    }
  }
  EXPECT_GT(refused, 50);  // most damage is noticed (a flipped byte inside the data is not damage a header shows)
  EXPECT_EQ(read + refused, 360);
}

}  // namespace
}  // namespace lmkit
