// A fuzzer for files: the tensor files other programs write (the fixtures made by NumPy, PyTorch
// and safetensors' layout, and lmkit's own writing in every format) and lmkit's checkpoints,
// mutated — bits flipped, bytes and fields set to edge values, cut short, slices repeated or
// removed, and zip members changed with their CRC-32 made right so that the parsers behind the
// zip reader see the damage — then listed and read. Each must end in a value or in lmkit's own
// error (EnvironmentError, UsageError), with the process's peak memory within a small multiple of
// the file's size plus the tensors it declares. A crash or a sanitizer report fails the run.
//
// Deterministic: the mutations come from a fixed seed. To search longer, run the case alone with
// LMKIT_FILE_FUZZ_SEED=<n> and LMKIT_FILE_FUZZ_ITERATIONS=<per file> in its environment; a failure
// names the seed, the file and the mutation, and keeps the mutated file in the folder it names.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "runtime/models/awd_lstm.h"
#include "runtime/core/atomic_file.h"
#include "runtime/core/byte_span.h"
#include "runtime/core/error.h"
#include "runtime/models/checkpoint.h"
#include "runtime/tensor_files/tensor_file.h"
#include "runtime/tensor_files/zip_archive.h"
#include "tests/support/source_tree.h"
#include "tests/support/temporary_folder.h"

namespace lmkit {
namespace {

std::uint64_t setting(const char* name, std::uint64_t fallback) {
  const char* value = std::getenv(name);
  return value && *value ? std::strtoull(value, nullptr, 10) : fallback;
}

std::string bytes_of(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

// The process's peak resident memory (VmHWM) since the last reset, in bytes; resetting needs
// Linux ≥ 4.0's /proc/self/clear_refs. -1 where either is unavailable.
bool reset_peak_memory() {
  std::ofstream clear("/proc/self/clear_refs");
  return clear && (clear << "5") && clear.flush();
}
std::int64_t peak_memory() {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("VmHWM:", 0) == 0) return std::stoll(line.substr(6)) * 1024;
  }
  return -1;
}

bool sanitized() {
#if defined(__SANITIZE_ADDRESS__)
  return true;  // ASan's shadow memory and quarantine are part of the resident set
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
  return true;
#endif
#endif
  return false;
}

struct Seed {
  std::string name;
  std::string bytes;
  bool checkpoint = false;
};

class TensorFileFuzzTest : public testing::TemporaryFolderTest {
 protected:
  TensorFileFuzzTest() : TemporaryFolderTest("lmkit_tensor_file_fuzz_", /*create=*/true) {}

  std::vector<Seed> seeds() {
    std::vector<Seed> out;
    const auto fixtures = testing::source_tree_path("tests/runtime/tensor_files/files");
    for (const auto& entry : std::filesystem::directory_iterator(fixtures)) {
      const auto extension = entry.path().extension().string();
      if (extension == ".npy" || extension == ".npz" || extension == ".safetensors" || extension == ".pt") {
        out.push_back({entry.path().filename().string(), bytes_of(entry.path().string())});
      }
    }
    torch::manual_seed(3);
    const std::map<std::string, torch::Tensor> tensors = {
        {"w", torch::randn({3, 4})}, {"b", torch::arange(5)}, {"h", torch::ones({2, 2}, torch::kFloat16)},
        {"flag", torch::tensor({true, false, true})}};
    for (const auto* format : {"safetensors", "npz", "pt"}) {
      const auto path = dir(std::string("lmkit.") + format);
      write_tensor_file(path, tensors, WriteTensorsOptions{format});
      out.push_back({std::string("lmkit's ") + format, bytes_of(path)});
    }
    const auto npy = dir("lmkit.npy");
    write_tensor_file(npy, {{"w", tensors.at("w")}}, WriteTensorsOptions{"npy"});
    out.push_back({"lmkit's npy", bytes_of(npy)});
    LanguageModelOptions options;
    options.encoder(AwdLstmOptions().vocab_size(12).emb(4).nhid(6).nhidlast(4).nlayers(2));
    const auto checkpoint = dir("model.ckpt");
    save_checkpoint(LanguageModel(options), checkpoint);
    out.push_back({"lmkit's checkpoint", bytes_of(checkpoint), true});
    return out;
  }
};

class Mutator {
 public:
  explicit Mutator(std::uint64_t seed) : random_(seed) {}

  // One mutation of `bytes` (described in `what`).
  std::string mutate(const Seed& seed, std::string& what) {
    std::string bytes = seed.bytes;
    const auto kind = below(seed.checkpoint ? 9 : 8);
    if (kind == 7 && !seed.checkpoint) return member_mutation(bytes, what);
    if (kind >= 7) return archive_mutation(bytes, what);
    if (bytes.empty()) return what = "empty", bytes;
    switch (kind) {
      case 0: {
        const auto flips = 1 + below(8);
        for (std::uint64_t i = 0; i < flips; ++i) bytes[below(bytes.size())] ^= static_cast<char>(1u << below(8));
        what = std::to_string(flips) + " bits flipped";
        break;
      }
      case 1: {
        static const unsigned char edges[] = {0x00, 0xFF, 0x7F, 0x80, 0x01, '"', '{', '[', '\n'};
        const auto count = 1 + below(4);
        for (std::uint64_t i = 0; i < count; ++i) bytes[below(bytes.size())] = static_cast<char>(edges[below(sizeof edges)]);
        what = std::to_string(count) + " bytes set to edge values";
        break;
      }
      case 2: {
        static const std::uint64_t fields[] = {0, 1, 0xFFFFFFFFu, 0x7FFFFFFFu, 0x80000000u, 0xFFFFFFFFFFFFFFFFull,
                                               0x7FFFFFFFFFFFFFFFull, 0x100000000ull, 1ull << 40};
        const int width = below(2) ? 8 : 4;
        if (bytes.size() < static_cast<std::size_t>(width)) break;
        const auto at = below(bytes.size() - static_cast<std::size_t>(width) + 1);
        const auto value = fields[below(sizeof fields / sizeof fields[0])];
        for (int i = 0; i < width; ++i) bytes[at + static_cast<std::size_t>(i)] = static_cast<char>((value >> (8 * i)) & 0xFFu);
        what = std::to_string(width) + "-byte field at " + std::to_string(at) + " set to " + std::to_string(value);
        break;
      }
      case 3: {
        const auto length = below(bytes.size());
        bytes.resize(length);
        what = "cut to " + std::to_string(length) + " bytes";
        break;
      }
      case 4: {
        const auto at = below(bytes.size()), length = 1 + below(std::min<std::size_t>(64, bytes.size() - at));
        bytes.insert(at, bytes.substr(at, length));
        what = std::to_string(length) + " bytes at " + std::to_string(at) + " repeated";
        break;
      }
      case 5: {
        const auto at = below(bytes.size()), length = 1 + below(std::min<std::size_t>(64, bytes.size() - at));
        bytes.erase(at, length);
        what = std::to_string(length) + " bytes at " + std::to_string(at) + " removed";
        break;
      }
      default: {
        const auto at = below(bytes.size());
        bytes.insert(at, std::string(1 + below(16), static_cast<char>(below(256))));
        what = "bytes inserted at " + std::to_string(at);
        break;
      }
    }
    return bytes;
  }

 private:
  std::uint64_t below(std::uint64_t n) { return n == 0 ? 0 : std::uniform_int_distribution<std::uint64_t>(0, n - 1)(random_); }

  // A zip's member changed and the archive rebuilt with right CRCs: the damage reaches the parser
  // of the member (NumPy's header, the pickle, a storage's length).
  std::string rezipped(const std::string& archive, std::string& what) {
    std::vector<std::pair<std::string, std::string>> members;
    try {
      std::string buffer;
      for (const auto& member : tensor_files::zip_members(ByteSpan("seed", archive))) {
        members.emplace_back(member.name, std::string(tensor_files::member_bytes(member, buffer, member.name)));
      }
    } catch (const EnvironmentError&) {
      return what = "not a zip: unchanged", archive;
    }
    if (members.empty()) return what = "an empty zip", archive;
    auto& [name, content] = members[below(members.size())];
    Seed inner{name, content};
    std::string inner_what;
    content = mutate_plain(inner, inner_what);
    what = "member '" + name + "': " + inner_what + " (CRC-32 right)";
    return tensor_files::stored_zip(members);
  }
  std::string mutate_plain(const Seed& seed, std::string& what) {
    Seed plain{seed.name, seed.bytes, false};
    std::string out;
    do {
      out = mutate(plain, what);
    } while (what.rfind("member", 0) == 0);
    return out;
  }
  std::string member_mutation(const std::string& bytes, std::string& what) {
    if (bytes.size() < 4 || bytes.compare(0, 2, "PK") != 0) return mutate_plain({"", bytes}, what);
    return rezipped(bytes, what);
  }
  // A checkpoint's weights archive changed (as a whole, or one member with right CRCs), the
  // container's checksum made right: only the inside is damaged.
  std::string archive_mutation(const std::string& bytes, std::string& what) {
    const auto container = decode_container(bytes, "seed");
    std::string inner_what;
    const auto archive = below(2) ? rezipped(container.archive, inner_what) : mutate_plain({"", container.archive}, inner_what);
    what = "weights archive: " + inner_what + " (checksum right)";
    return encode_container(container.header, archive);
  }

  std::mt19937_64 random_;
};

TEST_F(TensorFileFuzzTest, EveryMutatedFileEndsInAValueOrLmkitsRefusalWithinItsMemory) {
  const auto seed = setting("LMKIT_FILE_FUZZ_SEED", 20261126);
  const auto iterations = setting("LMKIT_FILE_FUZZ_ITERATIONS", 300);
  const bool measure = !sanitized() && reset_peak_memory() && peak_memory() > 0;
  std::cout << "file fuzz: seed " << seed << ", " << iterations << " mutations per file"
            << (measure ? ", peak memory checked" : ", peak memory not checked here") << std::endl;
  Mutator mutator(seed);
  const auto path = dir("mutated");
  std::int64_t values = 0, refusals = 0;
  for (const auto& file : seeds()) {
    for (std::uint64_t i = 0; i < iterations; ++i) {
      std::string what;
      const auto bytes = mutator.mutate(file, what);
      const std::string where = "seed " + std::to_string(seed) + ", " + file.name + ", mutation " + std::to_string(i) + " (" +
                                what + "), file " + path;
      { std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes; }
      if (measure) reset_peak_memory();
      const auto before = measure ? peak_memory() : 0;
      std::int64_t declared = 0;
      try {
        if (file.checkpoint) {
          load_checkpoint(path);
        } else {
          for (const auto& entry : tensor_file_contents(path)) declared += entry.bytes;
          for (const auto& [name, tensor] : read_tensor_file(path, {})) (void)name, (void)tensor;
        }
        ++values;
      } catch (const EnvironmentError&) {
        ++refusals;
      } catch (const UsageError&) {
        ++refusals;
      } catch (const std::exception& e) {
        ADD_FAILURE() << where << ": not lmkit's error: " << e.what();
        return;
      }
      if (measure) {
        const auto grown = peak_memory() - before;
        const auto allowed = (std::int64_t{96} << 20) + 64 * static_cast<std::int64_t>(bytes.size()) + 3 * declared;
        if (grown > allowed) {
          ADD_FAILURE() << where << ": peak memory grew by " << grown << " bytes, more than " << allowed;
          return;
        }
      }
    }
  }
  std::cout << "file fuzz: " << values << " read, " << refusals << " refused" << std::endl;
  EXPECT_GT(refusals, 0);
  EXPECT_GT(values, 0);
  std::filesystem::remove(path);
}

}  // namespace
}  // namespace lmkit
