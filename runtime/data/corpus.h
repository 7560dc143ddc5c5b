// A language-modelling corpus: a vocabulary and three splits of token ids.
//
// Real corpora are read from a folder (corpus_locator.h) under a protocol:
//   "full": train.txt, valid.txt, test.txt, vocabulary in that order (AWD-LSTM's data.Corpus);
//   "mini": for folders without a train split: train = the first ⌊9n/10⌋ of the n lines of valid.txt,
//           valid = the remaining lines, test = test.txt; vocabulary from all three in that order.
// Tokenized splits are cached (token_cache.h). Token tensors are int64 [n_tokens] on the CPU,
// holding 0-based vocabulary ids; they share the loader's buffers (8 bytes per token, no copy).
#pragma once
#include <nlohmann/json.hpp>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "runtime/config/bound_options.h"
#include "runtime/core/torch.h"
#include "runtime/data/vocabulary.h"

namespace lmkit::data {

struct Corpus {
  std::string name;      // "ptb", "wikitext-2", "synthetic", ...
  std::string protocol;  // "full", "mini" or "synthetic"
  std::string source;    // the folder read, or the generator's description
  std::shared_ptr<const Vocabulary> vocab;
  torch::Tensor train, valid, test;  // int64 [n]
  // How to make this corpus again (a run's resume rebuilds it from here; corpus_origin.h):
  // {"kind": "files", "name", "path", "protocol"} or {"kind": "synthetic", ...}; null if unknown.
  nlohmann::json origin;
  // How it was loaded (open_corpus): from the token cache or not, and why.
  bool from_cache = false;
  std::string cache_status = "none (generated)";
  std::optional<std::string> cache_file;
};
inline auto declared_result(config::Tag<Corpus>) {
  using config::result_field;
  return config::result_table(
      result_field("train", &Corpus::train, "int64 [n] token ids (0-based)"), result_field("valid", &Corpus::valid, "int64 [n]"),
      result_field("test", &Corpus::test, "int64 [n]"), result_field("vocab", &Corpus::vocab, "the Vocab"),
      result_field("name", &Corpus::name, "\"ptb\", \"wikitext-2\", \"synthetic\", ..."),
      result_field("protocol", &Corpus::protocol, "\"full\", \"mini\" or \"synthetic\""),
      result_field("source", &Corpus::source, "the folder read, or the generator's description"),
      result_field("from_cache", &Corpus::from_cache, "read from the token cache"),
      result_field("cache_status", &Corpus::cache_status, "why the cache was (not) used"),
      result_field("cache_file", &Corpus::cache_file, "the cache file (nil without one)"));
}
// "Corpus ptb (full): vocab 10000, train 929589, valid 73760, test 82430 tokens; <source>".
std::string corpus_summary(const Corpus& corpus);

// Whitespace-separated words to an int64 tensor of ids (Vocabulary::encode with these options).
struct EncodeOptions {
  bool eos = false;
  std::optional<std::string> unk;
};
const config::BoundOptions<EncodeOptions>& declared_options(config::Tag<EncodeOptions>);
torch::Tensor encode_text(const Vocabulary& vocab, const std::string& text, const EncodeOptions& options);

struct CorpusOptions {
  std::string name;
  std::optional<std::filesystem::path> path;       // explicit folder (overrides the search)
  std::string protocol = "full";                   // "full" or "mini"
  bool cache = true;                               // read/write the token cache
  std::optional<std::filesystem::path> cache_dir;  // where the cache goes (default: corpus_locator.h)
};

// What load_corpus did, for logs and tests.
struct LoadReport {
  bool from_cache = false;
  std::filesystem::path cache_file;  // empty when caching is off
  std::string cache_status;          // why the cache was (not) used: "hit", "no cache", "stale: ...", ...
  double seconds = 0;
};

// Loads a real corpus. Throws UsageError for an unknown protocol, EnvironmentError for a missing
// folder or split and for unreadable text (naming the file and line).
Corpus load_corpus(const CorpusOptions& options, LoadReport* report = nullptr);

// A 1-D int64 tensor that owns `ids` (moved in, not copied).
torch::Tensor to_tensor(std::vector<std::int64_t>&& ids);

}  // namespace lmkit::data
