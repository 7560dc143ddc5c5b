// Word similarity of a language model's embeddings (thesis §5.3.1, Tables 5.2–5.4, Fig. 5.3).
//
// A benchmark is a list of word pairs with a human similarity score (one pair per line: word,
// word, score, separated by tabs or spaces; CRLF line ends accepted). For an embedding E [N, d]
// whose row i belongs to the vocabulary's word with id i:
//   cos(u, v) = u·v / (‖u‖ ‖v‖)   (computed in float64; 0 when either row is all zeros)
//   ρ = Spearman's rank correlation between cos(E[w1], E[w2]) and the human scores over the kept
//       pairs, i.e. Pearson's r of their average ranks (ties share their mean rank; thesis eq. 5.1),
//       with the two-sided p-value of stats::spearmanr.
// A pair is skipped (and counted, Table 5.2) when either word is not in the vocabulary. Every line
// counts as a pair of the benchmark (WS-353's 353, as Table 5.2 says), but a pair listed again
// (the same two words in the same order: WS-353's "money cash", 9.15 then 9.08) enters ρ once,
// with the later line's score: Faruqui & Dyer's script, which the thesis follows, keys its scores
// by the pair. "bank money" and "money bank" are two pairs there, and here.
//
// Case (CaseRule): by default a benchmark word is lowercased (ASCII) and then looked up exactly —
// what Faruqui & Dyer's evaluation script, which the thesis follows, does to the benchmark lines.
// The thesis's Table 5.2 rules out folding the vocabulary's case as well (which that tool's vector
// reader does): on WT2 (a cased vocabulary) folding leaves only 70 MTurk-287 pairs out with just
// the valid+test vocabulary, fewer than the 106 the thesis reports with the full, larger one.
//   lower  lowercase(w) must be a vocabulary word (default)
//   exact  w must be a vocabulary word as spelled
//   fold   lowercase(w) must equal the lowercase form of a vocabulary word; when several share
//          it ("The", "the") the lowercase spelling wins, else the smallest id
#pragma once
#include <cstdint>
#include <filesystem>
#include <limits>
#include <optional>
#include <string>
#include <unordered_map>
#include <variant>
#include <vector>

#include "runtime/config/bound_options.h"
#include "runtime/core/torch.h"
#include "runtime/data/vocabulary.h"
#include "runtime/models/language_model.h"

namespace lmkit::analysis {

// A benchmark of the thesis: its name there and its file in the word-similarity folder.
struct BenchmarkName {
  const char* name;  // "WS-353", "SimLex-999", ...
  const char* file;  // "EN-WS-353-ALL.txt", ...
};

// The 13 benchmarks in the thesis's order (Table 5.2).
const std::vector<BenchmarkName>& similarity_benchmark_names();

// The benchmark called `name`: its thesis name or its file name with or without ".txt"
// ("WS-353", "EN-WS-353-ALL"), case-insensitive; throws UsageError listing the names otherwise.
const BenchmarkName& find_similarity_benchmark(const std::string& name);

struct SimilarityPair {
  std::string word1, word2;
  double score = 0.0;
  std::int64_t line = 0;  // 1-based line in its file
};

struct SimilarityBenchmark {
  std::string name;
  std::filesystem::path file;
  std::vector<SimilarityPair> pairs;
};

// Reads one benchmark file. Blank lines are ignored; any other line must be "word word score"
// (UsageError "file:line: ..." otherwise); a missing file is an EnvironmentError naming it.
SimilarityBenchmark read_similarity_benchmark(const std::filesystem::path& file, const std::string& name);

// The word-similarity folder: `dir` when given, else $LMKIT_DATA/word-similarity, else
// ./data/word-similarity; EnvironmentError naming the folders tried (and the download command).
std::filesystem::path locate_word_similarity(const std::optional<std::filesystem::path>& dir);

enum class CaseRule { kLower, kExact, kFold };

// "lower", "exact", "fold" → CaseRule; UsageError naming the three otherwise.
CaseRule parse_case_rule(const std::string& name);

// Benchmark word → vocabulary id under a case rule (above). Keeps a pointer to `vocab`.
class SimilarityLookup {
 public:
  explicit SimilarityLookup(const data::Vocabulary& vocab, CaseRule rule = CaseRule::kLower);
  std::optional<std::int64_t> find(const std::string& word) const;

 private:
  const data::Vocabulary* vocab_;
  CaseRule rule_;
  std::unordered_map<std::string, std::int64_t> folded_;
};

struct SimilarityResult {
  std::string name;
  std::string file;          // the benchmark's file (word_similarity)
  std::int64_t pairs = 0;    // pairs in the benchmark
  std::int64_t kept = 0;     // both words in the vocabulary
  std::int64_t skipped = 0;  // lines with a word outside the vocabulary
  std::int64_t repeated = 0; // lines repeating a kept pair (pairs = kept + skipped + repeated)
  double spearman = std::numeric_limits<double>::quiet_NaN();  // NaN when fewer than 2 pairs are kept,
  double pvalue = std::numeric_limits<double>::quiet_NaN();    // a side is constant, or not given
  std::vector<double> cosines, scores;  // of the kept pairs, in file order
};
inline auto declared_result(config::Tag<SimilarityResult>) {
  using R = SimilarityResult;
  using config::result_field;
  return config::result_table(
      result_field("name", &R::name, "the benchmark"), result_field("file", &R::file, "its file"),
      result_field("pairs", &R::pairs, "pairs in the benchmark"),
      result_field("kept", &R::kept, "pairs with both words in the vocabulary"),
      result_field("skipped", &R::skipped, "lines with a word outside the vocabulary"),
      result_field("repeated", &R::repeated, "lines repeating a kept pair"),
      result_field("spearman", &R::spearman, "ρ (nan when fewer than 2 pairs are kept, or all their cosines or all their scores are equal)"),
      result_field("p", &R::pvalue, "its two-sided p-value"));
}
inline auto declared_result(config::Tag<BenchmarkName>) {
  return config::result_table(config::result_field("name", &BenchmarkName::name, "the thesis's name"),
                              config::result_field("file", &BenchmarkName::file, "its file"));
}

// The benchmarks of one model (lmkit.analysis.word_similarity).
struct WordSimilarityOptions {
  std::optional<std::vector<std::string>> benchmarks;  // nil: all 13
  std::optional<std::string> dir;                      // nil: locate_word_similarity's search
  std::string case_rule = "lower";
};
const config::BoundOptions<WordSimilarityOptions>& declared_options(config::Tag<WordSimilarityOptions>);
// `embedding`: a matrix [N, d] or a model's input embedding; one row per vocabulary word.
std::vector<SimilarityResult> word_similarity(const std::variant<torch::Tensor, LanguageModel>& embedding,
                                              const data::Vocabulary& vocab, const WordSimilarityOptions& options);

// similarity_wins and similarity_best_counts of at least two models' results.
struct SimilarityComparison {
  std::vector<std::vector<std::int64_t>> wins;
  std::vector<std::int64_t> best;
};
inline auto declared_result(config::Tag<SimilarityComparison>) {
  return config::result_values(
      config::result_field("wins", &SimilarityComparison::wins, "wins[a][b]: benchmarks where model a's ρ is strictly above b's"),
      config::result_field("best", &SimilarityComparison::best, "best[a]: benchmarks where model a has the highest ρ (ties count for each)"));
}
SimilarityComparison compare_similarity(const std::vector<std::vector<SimilarityResult>>& models);
// Cosine similarity of the rows of `embedding` [N, d] for each kept pair, and ρ. The embedding
// must have one row per vocabulary word (N = vocab.size()).
SimilarityResult evaluate_similarity(const torch::Tensor& embedding, const SimilarityLookup& lookup,
                                     const SimilarityBenchmark& benchmark);

// wins[a][b] = number of benchmarks (matched by name, present for both) on which model a's ρ is
// strictly greater than model b's; NaN never wins. Diagonal 0.
std::vector<std::vector<std::int64_t>> similarity_wins(const std::vector<std::vector<SimilarityResult>>& models);

// best[a] = number of benchmarks on which model a has the highest ρ among all models that report
// the benchmark (ties: every tied model counts it) — the bars of the thesis's Fig. 5.3.
std::vector<std::int64_t> similarity_best_counts(const std::vector<std::vector<SimilarityResult>>& models);

}  // namespace lmkit::analysis
