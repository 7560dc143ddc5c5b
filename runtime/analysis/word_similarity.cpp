#include "runtime/analysis/word_similarity.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <limits>
#include <map>
#include <sstream>

#include "runtime/core/atomic_file.h"
#include "runtime/core/error.h"
#include "runtime/core/number_text.h"
#include "runtime/data/corpus_locator.h"
#include "runtime/stats/correlation.h"

namespace lmkit::analysis {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

std::string ascii_lower(std::string s) {
  for (auto& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\v' || c == '\f'; }

std::vector<std::string> split_fields(const std::string& line) {
  std::vector<std::string> fields;
  std::size_t i = 0;
  while (i < line.size()) {
    while (i < line.size() && is_space(line[i])) ++i;
    const std::size_t start = i;
    while (i < line.size() && !is_space(line[i])) ++i;
    if (i > start) fields.push_back(line.substr(start, i - start));
  }
  return fields;
}

}  // namespace

const std::vector<BenchmarkName>& similarity_benchmark_names() {
  static const std::vector<BenchmarkName> names = {
      {"WS-353", "EN-WS-353-ALL.txt"},      {"WS-353-SIM", "EN-WS-353-SIM.txt"},
      {"WS-353-REL", "EN-WS-353-REL.txt"},  {"RG-65", "EN-RG-65.txt"},
      {"MC-30", "EN-MC-30.txt"},            {"MTurk-287", "EN-MTurk-287.txt"},
      {"MTurk-771", "EN-MTurk-771.txt"},    {"MEN", "EN-MEN-TR-3k.txt"},
      {"YP-130", "EN-YP-130.txt"},          {"VERB-143", "EN-VERB-143.txt"},
      {"RW-STANFORD", "EN-RW-STANFORD.txt"}, {"SimVerb-3500", "EN-SimVerb-3500.txt"},
      {"SimLex-999", "EN-SIMLEX-999.txt"},
  };
  return names;
}

const BenchmarkName& find_similarity_benchmark(const std::string& name) {
  const std::string wanted = ascii_lower(name);
  std::string known;
  for (const auto& b : similarity_benchmark_names()) {
    const std::string file = ascii_lower(b.file);
    const std::string stem = file.substr(0, file.size() - 4);
    if (wanted == ascii_lower(b.name) || wanted == file || wanted == stem) return b;
    known += (known.empty() ? "" : ", ") + std::string(b.name);
  }
  throw UsageError("unknown word-similarity benchmark '" + name + "' (known: " + known + ")");
}

SimilarityBenchmark read_similarity_benchmark(const std::filesystem::path& file, const std::string& name) {
  if (std::filesystem::is_directory(file)) require_readable_file(file.string(), "word-similarity benchmark file");
  std::ifstream in(file, std::ios::binary);
  if (!in) {
    throw EnvironmentError("cannot read word-similarity benchmark file " + file.string() +
                           " (scripts/get_data.sh word-similarity downloads the 13 benchmarks)");
  }
  SimilarityBenchmark benchmark{name, file, {}};
  std::string line;
  std::int64_t number = 0;
  while (std::getline(in, line)) {
    ++number;
    const auto fields = split_fields(line);
    if (fields.empty()) continue;
    const std::string where = file.string() + ":" + integer_text(number) + ": ";
    if (fields.size() != 3) {
      throw UsageError(where + "expected 'word word score', got " + integer_text(fields.size()) + " field" +
                       (fields.size() == 1 ? "" : "s"));
    }
    const char* text = fields[2].c_str();
    char* end = nullptr;
    const double score = std::strtod(text, &end);
    if (end == text || *end != '\0' || !std::isfinite(score)) {
      throw UsageError(where + "score '" + fields[2] + "' is not a number");
    }
    benchmark.pairs.push_back({fields[0], fields[1], score, number});
  }
  if (in.bad()) throw EnvironmentError("error while reading " + file.string());
  return benchmark;
}

std::filesystem::path locate_word_similarity(const std::optional<std::filesystem::path>& dir) {
  const auto candidates = data::corpus_candidates("word-similarity", dir);
  std::string tried;
  for (const auto& candidate : candidates) {
    std::error_code ec;
    if (std::filesystem::is_directory(candidate, ec)) return candidate;
    tried += (tried.empty() ? "" : ", ") + candidate.string();
  }
  if (dir) {
    throw EnvironmentError("word-similarity folder " + dir->string() +
                           " does not exist (scripts/get_data.sh word-similarity downloads the 13 benchmarks)");
  }
  throw EnvironmentError("word-similarity benchmarks not found (tried: " + tried +
                         "); download them with scripts/get_data.sh word-similarity, or set LMKIT_DATA");
}

CaseRule parse_case_rule(const std::string& name) {
  if (name == "lower") return CaseRule::kLower;
  if (name == "exact") return CaseRule::kExact;
  if (name == "fold") return CaseRule::kFold;
  throw UsageError("unknown case rule '" + name + "' (known: lower, exact, fold)");
}

SimilarityLookup::SimilarityLookup(const data::Vocabulary& vocab, CaseRule rule) : vocab_(&vocab), rule_(rule) {
  if (rule_ != CaseRule::kFold) return;
  const auto& words = vocab.words();
  for (std::int64_t id = 0; id < vocab.size(); ++id) {
    const std::string& word = words[static_cast<std::size_t>(id)];
    const std::string folded = ascii_lower(word);
    auto [it, inserted] = folded_.emplace(folded, id);
    // An exact lowercase spelling beats an earlier capitalized one; otherwise the first id stays.
    if (!inserted && folded == word && words[static_cast<std::size_t>(it->second)] != folded) it->second = id;
  }
}

std::optional<std::int64_t> SimilarityLookup::find(const std::string& word) const {
  switch (rule_) {
    case CaseRule::kExact:
      return vocab_->find(word);
    case CaseRule::kLower:
      return vocab_->find(ascii_lower(word));
    case CaseRule::kFold:
      break;
  }
  const auto it = folded_.find(ascii_lower(word));
  if (it == folded_.end()) return std::nullopt;
  return it->second;
}

SimilarityResult evaluate_similarity(const torch::Tensor& embedding, const SimilarityLookup& lookup,
                                     const SimilarityBenchmark& benchmark) {
  if (!embedding.defined() || embedding.dim() != 2) {
    throw UsageError("word similarity needs an embedding matrix [N, d]");
  }
  SimilarityResult result;
  result.name = benchmark.name;
  result.pairs = static_cast<std::int64_t>(benchmark.pairs.size());
  std::vector<std::int64_t> first, second;
  std::vector<const SimilarityPair*> kept_pairs;
  std::map<std::pair<std::int64_t, std::int64_t>, std::size_t> position;  // kept pair → its index
  for (const auto& pair : benchmark.pairs) {
    const auto a = lookup.find(pair.word1);
    const auto b = lookup.find(pair.word2);
    if (!a || !b) {
      ++result.skipped;
      continue;
    }
    const auto [it, added] = position.emplace(std::make_pair(*a, *b), first.size());
    if (!added) {
      result.scores[it->second] = pair.score;  // the later line's score, as a dict keyed by the pair
      ++result.repeated;
      continue;
    }
    first.push_back(*a);
    second.push_back(*b);
    kept_pairs.push_back(&pair);
    result.scores.push_back(pair.score);
  }
  result.kept = static_cast<std::int64_t>(first.size());
  if (!first.empty()) {
    torch::NoGradGuard no_grad;
    const auto e = embedding.detach().to(torch::kCPU, torch::kFloat64);
    const auto options = torch::TensorOptions().dtype(torch::kInt64);  // host: indices into e, on the CPU
    const auto u = e.index_select(0, torch::tensor(first, options));
    const auto v = e.index_select(0, torch::tensor(second, options));
    // A NaN or ±Inf row has no direction: its cosine would be NaN (and read as 0 below), and ρ
    // would be computed as if the word were known. Refused, naming the word.
    const auto broken = torch::logical_or(u.isfinite().all(1).logical_not(), v.isfinite().all(1).logical_not());
    if (broken.any().item<bool>()) {
      const auto at = broken.nonzero()[0][0].item<std::int64_t>();
      const auto& pair = *kept_pairs[static_cast<std::size_t>(at)];
      const bool first_broken = !u[at].isfinite().all().item<bool>();
      const auto& word = first_broken ? pair.word1 : pair.word2;
      const auto row = first_broken ? first[static_cast<std::size_t>(at)] : second[static_cast<std::size_t>(at)];
      throw UsageError("word similarity (" + benchmark.name + "): the embedding row of '" + word + "' (row " +
                       integer_text(row + 1) + ") holds NaN or ±Inf: the model's embedding is damaged (a diverged run?), "
                       "and its similarities mean nothing");
    }
    const auto dot = (u * v).sum(1);
    const auto norms = ((u * u).sum(1) * (v * v).sum(1)).sqrt();
    const auto cos = torch::where(norms > 0, dot / norms.clamp_min(std::numeric_limits<double>::min()),
                                  torch::zeros_like(dot))
                         .contiguous();
    result.cosines.assign(cos.data_ptr<double>(), cos.data_ptr<double>() + cos.numel());
  }
  result.spearman = kNaN;
  result.pvalue = kNaN;
  const bool constant =
      result.kept >= 2 &&
      (std::all_of(result.cosines.begin(), result.cosines.end(), [&](double c) { return c == result.cosines[0]; }) ||
       std::all_of(result.scores.begin(), result.scores.end(), [&](double s) { return s == result.scores[0]; }));
  if (result.kept >= 2 && !constant) {
    const auto test = stats::spearmanr(result.cosines, result.scores);
    result.spearman = test.statistic;
    result.pvalue = test.pvalue;
  }
  return result;
}

namespace {

// Per model: benchmark name → ρ.
std::vector<std::map<std::string, double>> by_name(const std::vector<std::vector<SimilarityResult>>& models) {
  std::vector<std::map<std::string, double>> maps;
  for (const auto& results : models) {
    auto& m = maps.emplace_back();
    for (const auto& r : results) {
      if (r.name.empty()) {
        throw UsageError("an entry of the results of model " + integer_text(maps.size()) + " names no benchmark");
      }
      if (!m.emplace(r.name, r.spearman).second) {
        throw UsageError("benchmark '" + r.name + "' appears twice in the results of model " +
                         integer_text(maps.size()));
      }
    }
  }
  return maps;
}

}  // namespace

std::vector<std::vector<std::int64_t>> similarity_wins(const std::vector<std::vector<SimilarityResult>>& models) {
  const auto maps = by_name(models);
  const std::size_t n = maps.size();
  std::vector<std::vector<std::int64_t>> wins(n, std::vector<std::int64_t>(n, 0));
  for (std::size_t a = 0; a < n; ++a) {
    for (std::size_t b = 0; b < n; ++b) {
      if (a == b) continue;
      for (const auto& [name, rho] : maps[a]) {
        const auto other = maps[b].find(name);
        if (other != maps[b].end() && rho > other->second) ++wins[a][b];  // false for NaN
      }
    }
  }
  return wins;
}

std::vector<std::int64_t> similarity_best_counts(const std::vector<std::vector<SimilarityResult>>& models) {
  const auto maps = by_name(models);
  std::map<std::string, double> best;
  for (const auto& m : maps) {
    for (const auto& [name, rho] : m) {
      if (std::isnan(rho)) continue;
      auto [it, inserted] = best.emplace(name, rho);
      if (!inserted) it->second = std::max(it->second, rho);
    }
  }
  std::vector<std::int64_t> counts(maps.size(), 0);
  for (std::size_t a = 0; a < maps.size(); ++a) {
    for (const auto& [name, rho] : maps[a]) {
      const auto it = best.find(name);
      if (it != best.end() && rho == it->second) ++counts[a];
    }
  }
  return counts;
}

const config::BoundOptions<WordSimilarityOptions>& declared_options(config::Tag<WordSimilarityOptions>) {
  using O = WordSimilarityOptions;
  static const config::BoundOptions<O> options(
      "word_similarity",
      {{"benchmarks", &O::benchmarks, "names (\"WS-353\", \"SimLex-999\", ... or file names), or one name; nil: all 13"},
       {"dir", &O::dir, "the folder of EN-*.txt files (nil: $LMKIT_DATA/word-similarity, then ./data/word-similarity)"},
       {"case", &O::case_rule, config::OneOf{{"lower", "exact", "fold"}},
        "lower: each benchmark word lowercased (Faruqui & Dyer's script, which the thesis follows); exact: as "
        "spelled; fold: also ignoring the vocabulary's case"}});
  return options;
}

std::vector<SimilarityResult> word_similarity(const std::variant<torch::Tensor, LanguageModel>& source,
                                              const data::Vocabulary& vocab, const WordSimilarityOptions& options) {
  const auto embedding = std::holds_alternative<torch::Tensor>(source) ? std::get<torch::Tensor>(source)
                                                                        : std::get<LanguageModel>(source)->embedding();
  if (embedding.dim() != 2) throw UsageError("word_similarity: the embedding must be a matrix [N, d], got " + integer_text(embedding.dim()) + "-D");
  if (embedding.size(0) != vocab.size()) {
    throw UsageError("word_similarity: the embedding has " + integer_text(embedding.size(0)) + " rows but the vocabulary " +
                     integer_text(vocab.size()) + " words");
  }
  std::vector<BenchmarkName> chosen;
  if (!options.benchmarks) {
    chosen = similarity_benchmark_names();
  } else {
    if (options.benchmarks->empty()) throw UsageError("word_similarity: option 'benchmarks' is an empty list");
    for (const auto& name : *options.benchmarks) chosen.push_back(find_similarity_benchmark(name));
  }
  const auto dir = locate_word_similarity(options.dir ? std::optional<std::filesystem::path>(*options.dir) : std::nullopt);
  const SimilarityLookup lookup(vocab, parse_case_rule(options.case_rule));
  std::vector<SimilarityResult> results;
  for (const auto& b : chosen) {
    const auto benchmark = read_similarity_benchmark(dir / b.file, b.name);
    results.push_back(evaluate_similarity(embedding, lookup, benchmark));
    results.back().file = benchmark.file.string();
  }
  return results;
}

SimilarityComparison compare_similarity(const std::vector<std::vector<SimilarityResult>>& models) {
  if (models.size() < 2) throw UsageError("similarity_wins: need the results of at least 2 models, got " + integer_text(models.size()));
  return {similarity_wins(models), similarity_best_counts(models)};
}

}  // namespace lmkit::analysis
