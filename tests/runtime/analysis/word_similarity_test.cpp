// Word similarity on a handmade vocabulary and embedding whose cosines and ρ are known exactly,
// the benchmark reader's errors, and the 13 real benchmark files (when LMKIT_TEST_DATA is set).
#include "runtime/analysis/word_similarity.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <limits>
#include <map>

#include "runtime/core/error.h"
#include "runtime/stats/correlation.h"
#include "tests/runtime/data/data_test_util.h"

namespace lmkit::analysis {
namespace {

using data::testing::TempDir;
using ::testing::HasSubstr;

// ids: 0 <unk>, 1 cat, 2 dog, 3 car, 4 Paris, 5 Apple, 6 apple, 7 Bank
data::Vocabulary fake_vocab() {
  data::Vocabulary v;
  for (const char* w : {"<unk>", "cat", "dog", "car", "Paris", "Apple", "apple", "Bank"}) v.add(w);
  return v;
}

// Rows chosen so the cosines are exact: cat·dog = 1/√2, cat·car = 0, dog·car = 1/√2, cat·Paris = −1;
// <unk> is the zero vector.
torch::Tensor fake_embedding() {
  return torch::tensor({0.0, 0.0,  1.0, 0.0,  1.0, 1.0,  0.0, 1.0,  -2.0, 0.0,  0.0, 3.0,  3.0, 0.0,  1.0, 2.0},
                       torch::kFloat32)
      .view({8, 2});
}

// Tabs and spaces, CRLF, a blank line, two pairs with an out-of-vocabulary word.
const char* kBenchmark =
    "cat\tdog\t8\r\n"
    "cat car 2\r\n"
    "cat\tzebra\t5\r\n"
    "\r\n"
    "dog car 7\n"
    "unicorn dog 3\n"
    "cat  Paris\t0";

TEST(WordSimilarityTest, CosinesSpearmanAndSkippedPairsAreExact) {
  TempDir dir;
  const auto benchmark = read_similarity_benchmark(dir.write("bench.txt", kBenchmark), "bench");
  ASSERT_EQ(benchmark.pairs.size(), 6u);
  EXPECT_EQ(benchmark.pairs[3].line, 5);  // the blank line 4 is counted, not kept
  EXPECT_EQ(benchmark.pairs[5].word2, "Paris");

  const auto vocab = fake_vocab();
  const auto r = evaluate_similarity(fake_embedding(), SimilarityLookup(vocab, CaseRule::kExact), benchmark);
  EXPECT_EQ(r.name, "bench");
  EXPECT_EQ(r.pairs, 6);
  EXPECT_EQ(r.kept, 4);
  EXPECT_EQ(r.skipped, 2);
  ASSERT_EQ(r.cosines.size(), 4u);
  EXPECT_NEAR(r.cosines[0], 1 / std::sqrt(2.0), 1e-15);
  EXPECT_EQ(r.cosines[1], 0.0);
  EXPECT_NEAR(r.cosines[2], 1 / std::sqrt(2.0), 1e-15);
  EXPECT_NEAR(r.cosines[3], -1.0, 1e-15);
  EXPECT_EQ(r.scores, (std::vector<double>{8, 2, 7, 0}));
  // Average ranks: cosines (3.5, 2, 3.5, 1), scores (4, 2, 3, 1) → ρ = 4.5/√(4.5·5) = 3/√10.
  EXPECT_NEAR(r.spearman, 3 / std::sqrt(10.0), 1e-12);
  const auto reference = stats::spearmanr(r.cosines, r.scores);
  EXPECT_DOUBLE_EQ(r.pvalue, reference.pvalue);
  EXPECT_GT(r.pvalue, 0.0);
  EXPECT_LT(r.pvalue, 1.0);
}

TEST(WordSimilarityTest, APairListedAgainEntersRhoOnceWithItsLaterScore) {
  TempDir dir;
  const auto vocab = fake_vocab();
  // As WS-353's "money cash" (9.15, then 9.08 further down); "dog cat" is another pair.
  const auto repeated = read_similarity_benchmark(
      dir.write("repeated.txt", "cat dog 8\ncat car 2\ndog car 7\ncat dog 1\ndog cat 5\nzebra cat 3\n"), "repeated");
  const auto r = evaluate_similarity(fake_embedding(), SimilarityLookup(vocab), repeated);
  EXPECT_EQ(r.pairs, 6);
  EXPECT_EQ(r.kept, 4);
  EXPECT_EQ(r.repeated, 1);
  EXPECT_EQ(r.skipped, 1);
  EXPECT_EQ(r.scores, (std::vector<double>{1, 2, 7, 5}));
  const auto once = read_similarity_benchmark(
      dir.write("once.txt", "cat dog 1\ncat car 2\ndog car 7\ndog cat 5\n"), "once");
  EXPECT_EQ(evaluate_similarity(fake_embedding(), SimilarityLookup(vocab), once).spearman, r.spearman);
}

TEST(WordSimilarityTest, ZeroRowHasCosineZeroAndDegenerateResultsAreNaN) {
  TempDir dir;
  const auto vocab = fake_vocab();
  const SimilarityLookup lookup(vocab);
  const auto one = read_similarity_benchmark(dir.write("one.txt", "<unk> cat 3\nzebra cat 1\n"), "one");
  const auto r = evaluate_similarity(fake_embedding(), lookup, one);
  EXPECT_EQ(r.kept, 1);
  EXPECT_EQ(r.skipped, 1);
  EXPECT_EQ(r.cosines, std::vector<double>{0.0});
  EXPECT_TRUE(std::isnan(r.spearman));
  EXPECT_TRUE(std::isnan(r.pvalue));
  // Constant human scores: ρ is undefined.
  const auto flat = read_similarity_benchmark(dir.write("flat.txt", "cat dog 3\ncat car 3\n"), "flat");
  EXPECT_TRUE(std::isnan(evaluate_similarity(fake_embedding(), lookup, flat).spearman));
  const auto none = read_similarity_benchmark(dir.write("none.txt", "zebra cat 3\n"), "none");
  const auto empty = evaluate_similarity(fake_embedding(), lookup, none);
  EXPECT_EQ(empty.kept, 0);
  EXPECT_EQ(empty.skipped, 1);
  EXPECT_TRUE(std::isnan(empty.spearman));
  EXPECT_THROW(evaluate_similarity(torch::ones({8}), lookup, none), UsageError);
}

TEST(WordSimilarityTest, ANonFiniteRowIsRefusedNamingItsWord) {
  // A NaN row read as a zero vector gave cosine 0 and a ρ as if the word were known.
  TempDir dir;
  const auto vocab = fake_vocab();
  const auto benchmark = read_similarity_benchmark(dir.write("bench.txt", kBenchmark), "bench");
  auto embedding = fake_embedding();
  embedding[3][1] = std::numeric_limits<float>::quiet_NaN();  // car
  try {
    evaluate_similarity(embedding, SimilarityLookup(vocab), benchmark);
    ADD_FAILURE() << "a NaN row was used";
  } catch (const UsageError& e) {
    EXPECT_STREQ(e.what(), "word similarity (bench): the embedding row of 'car' (row 4) holds NaN or ±Inf: the model's "
                           "embedding is damaged (a diverged run?), and its similarities mean nothing");
  }
  // A word the benchmark never reaches may be anything.
  embedding = fake_embedding();
  embedding[7][0] = std::numeric_limits<float>::infinity();  // Bank
  EXPECT_NO_THROW(evaluate_similarity(embedding, SimilarityLookup(vocab), benchmark));
}

TEST(WordSimilarityTest, CaseRules) {
  const auto vocab = fake_vocab();
  const SimilarityLookup lower(vocab, CaseRule::kLower), exact(vocab, CaseRule::kExact), fold(vocab, CaseRule::kFold);
  EXPECT_EQ(lower.find("CAT"), 1);
  EXPECT_EQ(lower.find("Apple"), 6);
  EXPECT_EQ(lower.find("Paris"), std::nullopt);  // the vocabulary's "Paris" is not lowercase
  EXPECT_EQ(lower.find("bank"), std::nullopt);
  EXPECT_EQ(exact.find("CAT"), std::nullopt);
  EXPECT_EQ(exact.find("Apple"), 5);
  EXPECT_EQ(exact.find("Paris"), 4);
  EXPECT_EQ(fold.find("PARIS"), 4);
  EXPECT_EQ(fold.find("APPLE"), 6);  // "apple" wins over the earlier "Apple"
  EXPECT_EQ(fold.find("bank"), 7);
  EXPECT_EQ(fold.find("zebra"), std::nullopt);
  EXPECT_EQ(parse_case_rule("fold"), CaseRule::kFold);
  EXPECT_THAT([] { parse_case_rule("upper"); }, ::testing::ThrowsMessage<UsageError>(HasSubstr("lower, exact, fold")));
}

TEST(WordSimilarityTest, MalformedAndMissingFilesAreNamed) {
  TempDir dir;
  const auto short_line = dir.write("short.txt", "cat dog 1\ncat dog\n");
  EXPECT_THAT([&] { read_similarity_benchmark(short_line, "x"); },
              ::testing::ThrowsMessage<UsageError>(HasSubstr("short.txt:2: expected 'word word score', got 2 fields")));
  const auto bad_score = dir.write("score.txt", "cat dog 1\n\ncat dog high\n");
  EXPECT_THAT([&] { read_similarity_benchmark(bad_score, "x"); },
              ::testing::ThrowsMessage<UsageError>(HasSubstr("score.txt:3: score 'high' is not a number")));
  EXPECT_THAT([&] { read_similarity_benchmark(dir.path() / "absent.txt", "x"); },
              ::testing::ThrowsMessage<EnvironmentError>(HasSubstr("absent.txt")));
  EXPECT_THAT([&] { locate_word_similarity(dir.path() / "nowhere"); },
              ::testing::ThrowsMessage<EnvironmentError>(HasSubstr("nowhere does not exist")));
  EXPECT_EQ(locate_word_similarity(dir.path()), dir.path());
}

TEST(WordSimilarityTest, BenchmarkNames) {
  ASSERT_EQ(similarity_benchmark_names().size(), 13u);
  EXPECT_STREQ(find_similarity_benchmark("WS-353").file, "EN-WS-353-ALL.txt");
  EXPECT_STREQ(find_similarity_benchmark("simlex-999").file, "EN-SIMLEX-999.txt");
  EXPECT_STREQ(find_similarity_benchmark("EN-MEN-TR-3k").name, "MEN");
  EXPECT_STREQ(find_similarity_benchmark("EN-VERB-143.txt").name, "VERB-143");
  EXPECT_THAT([] { find_similarity_benchmark("WS-999"); },
              ::testing::ThrowsMessage<UsageError>(HasSubstr("unknown word-similarity benchmark 'WS-999'")));
}

SimilarityResult result(const std::string& name, double rho) {
  SimilarityResult r;
  r.name = name;
  r.spearman = rho;
  return r;
}

TEST(WordSimilarityTest, WinsAndBestCounts) {
  const double nan = std::nan("");
  const std::vector<std::vector<SimilarityResult>> models = {
      {result("X", 0.5), result("Y", 0.2), result("Z", nan)},
      {result("X", 0.4), result("Y", 0.3), result("Z", 0.1)},
      {result("Y", 0.1), result("X", 0.5)},  // other order, no Z
  };
  const auto wins = similarity_wins(models);
  const std::vector<std::vector<std::int64_t>> expected = {{0, 1, 1}, {1, 0, 1}, {0, 1, 0}};
  EXPECT_EQ(wins, expected);
  // X: A and C tie at 0.5; Y: B; Z: B (NaN never counts).
  EXPECT_EQ(similarity_best_counts(models), (std::vector<std::int64_t>{1, 2, 1}));
  const std::vector<std::vector<SimilarityResult>> twice = {{result("X", 1), result("X", 2)}, {}};
  EXPECT_THROW(similarity_wins(twice), UsageError);
}

// The 13 real benchmark files: pair counts as in thesis Table 5.2 (which match the files' lines).
TEST(WordSimilarityTest, RealBenchmarksHaveTheirPairCounts) {
  const char* root = std::getenv("LMKIT_TEST_DATA");
  if (root == nullptr || *root == '\0') GTEST_SKIP() << "LMKIT_TEST_DATA is not set";
  const auto dir = std::filesystem::path(root) / "word-similarity";
  if (!std::filesystem::is_directory(dir)) GTEST_SKIP() << dir << " is absent";
  const std::map<std::string, std::size_t> table_5_2 = {
      {"WS-353", 353},   {"WS-353-SIM", 203},  {"WS-353-REL", 252},   {"RG-65", 65},          {"MC-30", 30},
      {"MTurk-287", 287}, {"MTurk-771", 771},  {"MEN", 3000},         {"YP-130", 130},        {"VERB-143", 144},
      {"RW-STANFORD", 2034}, {"SimVerb-3500", 3500}, {"SimLex-999", 999}};
  data::Vocabulary all_words;
  std::vector<SimilarityBenchmark> benchmarks;
  for (const auto& b : similarity_benchmark_names()) {
    const auto file = dir / b.file;
    auto benchmark = read_similarity_benchmark(file, b.name);
    // As many pairs as the file has non-blank lines.
    std::ifstream in(file);
    std::size_t lines = 0;
    for (std::string line; std::getline(in, line);) lines += line.find_first_not_of(" \t\r") != std::string::npos;
    EXPECT_EQ(benchmark.pairs.size(), lines) << b.file;
    EXPECT_EQ(benchmark.pairs.size(), table_5_2.at(b.name)) << b.name;
    for (const auto& p : benchmark.pairs) {
      all_words.add(p.word1);
      all_words.add(p.word2);
    }
    benchmarks.push_back(std::move(benchmark));
  }
  // With every word in the vocabulary nothing is skipped.
  torch::manual_seed(0);
  const auto embedding = torch::randn({all_words.size(), 8});
  for (const auto& benchmark : benchmarks) {
    const auto r = evaluate_similarity(embedding, SimilarityLookup(all_words, CaseRule::kExact), benchmark);
    EXPECT_EQ(r.skipped, 0) << r.name;
    EXPECT_FALSE(std::isnan(r.spearman)) << r.name;
  }
}

// The PTB valid+test words are a subset of the thesis's PTB vocabulary, so no benchmark can skip
// fewer pairs with them than Table 5.2 reports.
TEST(WordSimilarityTest, PtbValidTestVocabularySkipsAtLeastTable52) {
  const auto ptb = data::testing::test_corpus("ptb");
  const char* root = std::getenv("LMKIT_TEST_DATA");
  if (!ptb || !std::filesystem::is_directory(std::filesystem::path(root) / "word-similarity")) {
    GTEST_SKIP() << "LMKIT_TEST_DATA with ptb and word-similarity is not available";
  }
  data::Vocabulary vocab;
  for (const char* split : {"valid.txt", "test.txt"}) {
    std::ifstream in(*ptb / split);
    for (std::string word; in >> word;) vocab.add(word);
  }
  const std::map<std::string, std::int64_t> not_in_ptb = {
      {"WS-353", 116},   {"WS-353-SIM", 66},  {"WS-353-REL", 80},    {"RG-65", 55},          {"MC-30", 21},
      {"MTurk-287", 146}, {"MTurk-771", 346}, {"MEN", 1952},         {"YP-130", 65},         {"VERB-143", 9},
      {"RW-STANFORD", 1889}, {"SimVerb-3500", 1746}, {"SimLex-999", 424}};
  const auto embedding = torch::randn({vocab.size(), 4});
  const SimilarityLookup lookup(vocab);
  for (const auto& b : similarity_benchmark_names()) {
    const auto benchmark = read_similarity_benchmark(std::filesystem::path(root) / "word-similarity" / b.file, b.name);
    const auto r = evaluate_similarity(embedding, lookup, benchmark);
    EXPECT_GE(r.skipped, not_in_ptb.at(b.name)) << b.name;
    EXPECT_EQ(r.kept + r.skipped + r.repeated, r.pairs);
  }
}

}  // namespace
}  // namespace lmkit::analysis
