// Loading real corpora: the reference's token counts and ids on PTB/WikiText-2 (when
// LMKIT_TEST_DATA has them), the folder search, and the token cache's invalidation rules.
#include "runtime/data/token_cache.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <thread>

#include "runtime/core/error.h"
#include "runtime/data/content_hash.h"
#include "runtime/data/corpus.h"
#include "runtime/data/corpus_locator.h"
#include "tests/runtime/data/data_test_util.h"

namespace lmkit::data {
namespace {

using testing::TempDir;
using testing::test_corpus;

std::vector<std::int64_t> values(const torch::Tensor& t) {
  return std::vector<std::int64_t>(t.data_ptr<std::int64_t>(), t.data_ptr<std::int64_t>() + t.numel());
}

// A small corpus folder with all three splits.
void write_corpus(const TempDir& dir) {
  dir.write("c/train.txt", "the cat sat\non the mat\n");
  dir.write("c/valid.txt", "the dog sat\n");
  dir.write("c/test.txt", "a cat\n");
}

CorpusOptions options_for(const std::filesystem::path& path, const std::filesystem::path& cache_dir,
                          const std::string& protocol = "full") {
  CorpusOptions o;
  o.name = "c";
  o.path = path;
  o.protocol = protocol;
  o.cache_dir = cache_dir;
  return o;
}

TEST(CorpusTest, FullProtocolReadsTrainValidTestInVocabularyOrder) {
  TempDir dir;
  write_corpus(dir);
  LoadReport report;
  auto c = load_corpus(options_for(dir.path() / "c", dir.path() / "cache"), &report);
  EXPECT_EQ(values(c.train), (std::vector<std::int64_t>{0, 1, 2, 3, 4, 0, 5, 3}));
  EXPECT_EQ(values(c.valid), (std::vector<std::int64_t>{0, 6, 2, 3}));
  EXPECT_EQ(values(c.test), (std::vector<std::int64_t>{7, 1, 3}));
  EXPECT_EQ(c.vocab->size(), 8);
  EXPECT_EQ(c.train.scalar_type(), torch::kInt64);
  EXPECT_FALSE(report.from_cache);
  EXPECT_EQ(report.cache_status, "no cache");
}

TEST(CorpusTest, MissingSplitIsNamedWithTheWayOut) {
  TempDir dir;
  dir.write("c/valid.txt", "a\n");
  dir.write("c/test.txt", "b\n");
  try {
    load_corpus(options_for(dir.path() / "c", dir.path() / "cache"));
    FAIL();
  } catch (const EnvironmentError& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("has no train.txt"), std::string::npos) << m;
    EXPECT_NE(m.find("protocol='mini'"), std::string::npos) << m;
  }
  EXPECT_THROW(load_corpus(options_for(dir.path() / "c", dir.path() / "cache", "tiny")), UsageError);
}

TEST(CorpusTest, EmptySplitIsAnErrorNamingIt) {
  TempDir dir;
  write_corpus(dir);
  dir.write("c/valid.txt", "");
  try {
    load_corpus(options_for(dir.path() / "c", dir.path() / "cache"));
    FAIL();
  } catch (const EnvironmentError& e) {
    EXPECT_NE(std::string(e.what()).find("valid.txt: the file is empty"), std::string::npos) << e.what();
  }
}

TEST(CorpusTest, MiniProtocolSplitsValidLines) {
  TempDir dir;
  std::string valid;
  for (int i = 0; i < 20; ++i) valid += "l" + std::to_string(i) + "\n";
  dir.write("m/valid.txt", valid);
  dir.write("m/test.txt", "l0 new\n");
  auto c = load_corpus(options_for(dir.path() / "m", dir.path() / "cache", "mini"));
  EXPECT_EQ(c.train.numel(), 18 * 2);  // ⌊9·20/10⌋ lines of one word + <eos>
  EXPECT_EQ(c.valid.numel(), 2 * 2);
  EXPECT_EQ(values(c.valid)[0], c.vocab->find("l18").value());
  EXPECT_EQ(values(c.test), (std::vector<std::int64_t>{0, 21, 1}));
}

// CTest runs this with LMKIT_DATA set to a folder of its own (tests/CMakeLists.txt): a test never
// edits its own environment.
TEST(CorpusLocatorTest, SearchOrderAndMessage) {
  const char* data = std::getenv("LMKIT_DATA");
  if (data == nullptr) GTEST_SKIP() << "run by CTest, which sets LMKIT_DATA to a folder of this test's own";
  const std::filesystem::path root(data);
  std::filesystem::remove_all(root);
  std::filesystem::create_directories(root);
  const auto candidates = corpus_candidates("wt2", std::nullopt);
  ASSERT_EQ(candidates.size(), 2u);
  EXPECT_EQ(candidates[0], root / "wikitext-2");
  EXPECT_EQ(candidates[1], std::filesystem::path("data") / "wikitext-2");
  try {
    locate_corpus("wt2", std::nullopt);
    FAIL();
  } catch (const EnvironmentError& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find((root / "wikitext-2").string()), std::string::npos) << m;
    EXPECT_NE(m.find("data/wikitext-2"), std::string::npos) << m;
    EXPECT_NE(m.find("scripts/get_data.sh wikitext-2"), std::string::npos) << m;
  }
  std::filesystem::create_directories(root / "wikitext-2");
  { std::ofstream(root / "wikitext-2" / "valid.txt") << "x\n"; }
  EXPECT_EQ(locate_corpus("wt2", std::nullopt), root / "wikitext-2");
  TempDir dir;
  EXPECT_THROW(locate_corpus("ptb", dir.path() / "nowhere"), EnvironmentError);
  std::filesystem::remove_all(root);
}

TEST(TokenCacheTest, SecondLoadHitsTheCache) {
  TempDir dir;
  write_corpus(dir);
  const auto options = options_for(dir.path() / "c", dir.path() / "cache");
  auto first = load_corpus(options);
  LoadReport report;
  auto second = load_corpus(options, &report);
  EXPECT_TRUE(report.from_cache) << report.cache_status;
  EXPECT_EQ(report.cache_status, "hit");
  EXPECT_TRUE(torch::equal(first.train, second.train));
  EXPECT_TRUE(torch::equal(first.test, second.test));
  EXPECT_EQ(*first.vocab, *second.vocab);
  EXPECT_EQ(report.cache_file.parent_path(), dir.path() / "cache");
}

TEST(TokenCacheTest, WritableCorpusFolderHoldsItsCache) {
  TempDir dir;
  write_corpus(dir);
  EXPECT_EQ(cache_file_for(dir.path() / "c", "full", std::nullopt), dir.path() / "c" / "lmkit-full.tokens");
  // A folder without write permission bits sends the cache elsewhere, even for root.
  std::filesystem::permissions(dir.path() / "c", std::filesystem::perms::owner_write | std::filesystem::perms::group_write |
                               std::filesystem::perms::others_write, std::filesystem::perm_options::remove);
  // CTest sets LMKIT_CACHE_DIR for this test (tests/CMakeLists.txt): a test never edits its own environment.
  const char* user_cache = std::getenv("LMKIT_CACHE_DIR");
  if (user_cache == nullptr) GTEST_SKIP() << "run by CTest, which sets LMKIT_CACHE_DIR";
  const auto file = cache_file_for(dir.path() / "c", "full", std::nullopt);
  EXPECT_EQ(file.parent_path(), std::filesystem::path(user_cache));
  EXPECT_NE(file.filename().string().find("c-"), std::string::npos);
  std::filesystem::permissions(dir.path() / "c", std::filesystem::perms::owner_write, std::filesystem::perm_options::add);
}

TEST(TokenCacheTest, TouchedOrModifiedSourceRebuilds) {
  TempDir dir;
  write_corpus(dir);
  const auto options = options_for(dir.path() / "c", dir.path() / "cache");
  load_corpus(options);
  // Touch: same bytes, newer mtime.
  const auto valid = dir.path() / "c" / "valid.txt";
  std::filesystem::last_write_time(valid, std::filesystem::last_write_time(valid) + std::chrono::seconds(5));
  LoadReport report;
  load_corpus(options, &report);
  EXPECT_FALSE(report.from_cache);
  EXPECT_EQ(report.cache_status, "stale: valid.txt was modified (mtime)");
  load_corpus(options, &report);
  EXPECT_TRUE(report.from_cache);
  // Same size, same mtime, other bytes: only the content hash notices.
  const auto time = std::filesystem::last_write_time(valid);
  dir.write("c/valid.txt", "the dog ran\n");
  std::filesystem::last_write_time(valid, time);
  auto c = load_corpus(options, &report);
  EXPECT_FALSE(report.from_cache);
  EXPECT_EQ(report.cache_status, "stale: valid.txt has other contents");
  EXPECT_EQ(c.vocab->decode(values(c.valid)), "the dog ran <eos>");
  // Other protocols keep their own cache files.
  EXPECT_NE(cache_file_for(dir.path() / "c", "mini", dir.path() / "cache"), report.cache_file);
}

TEST(TokenCacheTest, CorruptCacheIsDetectedAndRebuilt) {
  TempDir dir;
  write_corpus(dir);
  const auto options = options_for(dir.path() / "c", dir.path() / "cache");
  LoadReport report;
  const auto reference = load_corpus(options, &report);
  const auto file = report.cache_file;
  std::string bytes;
  {
    std::ifstream in(file, std::ios::binary);
    bytes.assign(std::istreambuf_iterator<char>(in), {});
  }
  // One flipped bit in a token id (the last 8 bytes are the test split's last id).
  std::string flipped = bytes;
  flipped[flipped.size() - 8] ^= 0x01;
  dir.write("cache/" + file.filename().string(), flipped);
  auto c = load_corpus(options, &report);
  EXPECT_FALSE(report.from_cache);
  EXPECT_EQ(report.cache_status, "corrupt (checksum mismatch)");
  EXPECT_TRUE(torch::equal(c.test, reference.test));
  load_corpus(options, &report);
  EXPECT_TRUE(report.from_cache) << "the rebuilt cache is used again";
  // Truncated file, garbage file.
  dir.write("cache/" + file.filename().string(), bytes.substr(0, bytes.size() - 5));
  load_corpus(options, &report);
  EXPECT_EQ(report.cache_status.rfind("corrupt", 0), 0u) << report.cache_status;
  dir.write("cache/" + file.filename().string(), "garbage");
  load_corpus(options, &report);
  EXPECT_EQ(report.cache_status.rfind("corrupt", 0), 0u) << report.cache_status;
  // No temporary files are left behind.
  int files = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir.path() / "cache")) files += entry.is_regular_file();
  EXPECT_EQ(files, 1);
}

TEST(TokenCacheTest, ACacheOfAnotherFormatVersionIsRebuiltNotRead) {
  // Version 1 files (lmkit's own hash) have the same layout with other checksums: a version-1
  // header in front of this version's payload must be stale, not "corrupt" or, worse, read.
  TempDir dir;
  write_corpus(dir);
  const auto options = options_for(dir.path() / "c", dir.path() / "cache");
  LoadReport report;
  const auto reference = load_corpus(options, &report);
  std::string bytes;
  {
    std::ifstream in(report.cache_file, std::ios::binary);
    bytes.assign(std::istreambuf_iterator<char>(in), {});
  }
  const std::uint32_t old_version = 1;
  std::memcpy(bytes.data() + 8, &old_version, 4);  // magic (8 bytes), then the format version
  dir.write("cache/" + report.cache_file.filename().string(), bytes);
  auto c = load_corpus(options, &report);
  EXPECT_FALSE(report.from_cache);
  EXPECT_EQ(report.cache_status, "stale: cache format 1");
  EXPECT_TRUE(torch::equal(c.train, reference.train));
  load_corpus(options, &report);
  EXPECT_TRUE(report.from_cache) << "the rebuilt cache is used again";
}

TEST(ContentHashTest, IsXxh3AndIndependentOfHowTheInputIsSplit) {
  // XXH3-64 of the empty input with seed 0: the reference implementation's test vector.
  EXPECT_EQ(hash_bytes("", 0), 0x2D06800538D394C2ULL);
  std::string text;
  for (int i = 0; i < 1000; ++i) text += static_cast<char>('a' + (i * 7919) % 26);
  const auto whole = hash_bytes(text.data(), text.size());
  for (std::size_t piece : {1u, 3u, 31u, 32u, 33u, 240u, 999u}) {
    ContentHash h;
    for (std::size_t at = 0; at < text.size(); at += piece) h.update(std::string_view(text).substr(at, piece));
    EXPECT_EQ(h.digest(), whole) << "pieces of " << piece;
  }
  text[500] ^= 1;
  EXPECT_NE(hash_bytes(text.data(), text.size()), whole);
}

TEST(RealCorpusTest, PtbMatchesTheReferenceReader) {
  const auto ptb = test_corpus("ptb");
  if (!ptb) GTEST_SKIP() << "LMKIT_TEST_DATA has no ptb/ (valid.txt, test.txt)";
  TempDir cache;
  auto c = load_corpus(options_for(*ptb, cache.path(), "mini"));
  // Counts and ids computed by AWD-LSTM's data.py reading the same lines.
  EXPECT_EQ(c.test.numel(), 82430);
  EXPECT_EQ(c.train.numel() + c.valid.numel(), 73760);
  EXPECT_EQ(c.train.numel(), 66481);
  EXPECT_EQ(c.valid.numel(), 7279);
  EXPECT_EQ(c.vocab->size(), 7596);
  EXPECT_EQ(values(c.test.narrow(0, 0, 12)),
            (std::vector<std::int64_t>{235, 340, 313, 402, 866, 18, 13, 82, 179, 10, 53, 165}));
  EXPECT_EQ(c.vocab->decode(values(c.test.narrow(0, 0, 7))), "no it was n't black monday <eos>");
  EXPECT_EQ(values(c.valid.narrow(0, 0, 8)), (std::vector<std::int64_t>{237, 228, 296, 5792, 3, 10, 2897, 52}));
  EXPECT_EQ(c.test.sum().item<std::int64_t>(), 91225890);
  EXPECT_EQ(c.train.sum().item<std::int64_t>(), 61001603);
}

TEST(RealCorpusTest, WikiText2CountsAndCacheReload) {
  const auto wt2 = test_corpus("wikitext-2");
  if (!wt2) GTEST_SKIP() << "LMKIT_TEST_DATA has no wikitext-2/";
  TempDir cache;
  LoadReport report;
  auto c = load_corpus(options_for(*wt2, cache.path(), "mini"), &report);
  EXPECT_EQ(c.train.numel() + c.valid.numel(), 217646);
  EXPECT_EQ(c.test.numel(), 245569);
  EXPECT_EQ(c.vocab->size(), 18328);
  EXPECT_EQ(c.test.sum().item<std::int64_t>(), 578188795);
  const double build = report.seconds;
  auto again = load_corpus(options_for(*wt2, cache.path(), "mini"), &report);
  EXPECT_TRUE(report.from_cache);
  EXPECT_TRUE(torch::equal(again.test, c.test));
  std::printf("[ measure  ] WikiText-2 valid+test: tokenize %.1f ms, cache reload %.1f ms\n", build * 1e3,
              report.seconds * 1e3);
}

}  // namespace
}  // namespace lmkit::data
