#include "runtime/data/corpus.h"

#include <chrono>

#include "runtime/core/error.h"
#include "runtime/core/number_text.h"
#include "runtime/data/corpus_locator.h"
#include "runtime/data/corpus_reader.h"
#include "runtime/data/token_cache.h"

namespace lmkit::data {
namespace {

std::vector<std::string> protocol_files(const std::string& protocol) {
  if (protocol == "full") return {"train.txt", "valid.txt", "test.txt"};
  if (protocol == "mini") return {"valid.txt", "test.txt"};
  throw UsageError("unknown corpus protocol '" + protocol + "' (known: full, mini)");
}

void check_files_present(const std::filesystem::path& dir, const std::string& name, const std::string& protocol) {
  for (const auto& file : protocol_files(protocol)) {
    std::error_code ec;
    if (std::filesystem::is_regular_file(dir / file, ec)) continue;
    std::string message = "corpus folder " + dir.string() + " has no " + file + " (protocol '" + protocol +
                          "' reads " + (protocol == "full" ? "train.txt, valid.txt, test.txt" : "valid.txt, test.txt") +
                          "); scripts/get_data.sh " + canonical_corpus_name(name) + " downloads the corpus";
    if (protocol == "full" && file == "train.txt") message += "; protocol='mini' needs only valid.txt and test.txt";
    throw EnvironmentError(message);
  }
}

// Tokenizes the protocol's files in vocabulary order; returns the splits train, valid, test.
CachedTokens tokenize(const std::filesystem::path& dir, const std::string& protocol, const CacheKey& key,
                      bool& changed_while_reading) {
  CachedTokens tokens;
  changed_while_reading = false;
  auto read = [&](std::size_t k) {
    auto file = tokenize_file(dir / key.files[k].name, tokens.vocab);
    changed_while_reading = changed_while_reading || file.content_hash != key.files[k].content_hash;
    return file;
  };
  if (protocol == "full") {
    tokens.splits.push_back({"train", read(0).ids});
    tokens.splits.push_back({"valid", read(1).ids});
    tokens.splits.push_back({"test", read(2).ids});
  } else {
    auto valid = read(0);
    const std::size_t lines = valid.line_ends.size();
    const std::size_t train_lines = lines * 9 / 10;
    if (train_lines == 0 || train_lines == lines) {
      throw EnvironmentError((dir / "valid.txt").string() + ": the mini protocol needs at least 2 lines, got " +
                             integer_text(lines));
    }
    const auto cut = static_cast<std::ptrdiff_t>(valid.line_ends[train_lines - 1]);
    tokens.splits.push_back({"train", std::vector<std::int64_t>(valid.ids.begin(), valid.ids.begin() + cut)});
    tokens.splits.push_back({"valid", std::vector<std::int64_t>(valid.ids.begin() + cut, valid.ids.end())});
    tokens.splits.push_back({"test", read(1).ids});
  }
  return tokens;
}

}  // namespace

torch::Tensor to_tensor(std::vector<std::int64_t>&& ids) {
  // host: no ids (an empty text). Torch never calls the deleter of a blob at nullptr, which is
  // where an empty vector's data lives: the vector would leak.
  if (ids.empty()) return torch::empty({0}, torch::kInt64);
  auto* owned = new std::vector<std::int64_t>(std::move(ids));
  const auto n = static_cast<std::int64_t>(owned->size());
  // host: token ids read from disk; batches go to the model's device where they are used (batchify(...).to)
  return torch::from_blob(owned->data(), {n}, [owned](void*) { delete owned; }, torch::kInt64);
}

Corpus load_corpus(const CorpusOptions& options, LoadReport* report) {
  const auto start = std::chrono::steady_clock::now();
  protocol_files(options.protocol);  // rejects an unknown protocol before touching the disk
  const auto dir = locate_corpus(options.name, options.path);
  check_files_present(dir, options.name, options.protocol);

  CacheKey key{options.protocol, {}};
  for (const auto& file : protocol_files(options.protocol)) key.files.push_back(fingerprint(dir / file));

  LoadReport local;
  LoadReport& r = report ? *report : local;
  r = LoadReport{};
  std::optional<CachedTokens> tokens;
  std::optional<TokenCache> cache;
  if (options.cache) {
    cache.emplace(cache_file_for(dir, options.protocol, options.cache_dir));
    r.cache_file = cache->file();
    tokens = cache->load(key, &r.cache_status);
    r.from_cache = tokens.has_value();
    if (tokens) r.cache_status = "hit";
  } else {
    r.cache_status = "off";
  }
  if (!tokens) {
    bool changed = false;
    tokens = tokenize(dir, options.protocol, key, changed);
    if (cache && !changed) {
      try {
        cache->store(key, *tokens);
      } catch (const EnvironmentError& e) {
        r.cache_status += "; not written: " + std::string(e.what());  // the corpus is still usable
      }
    }
  }

  Corpus corpus;
  corpus.name = canonical_corpus_name(options.name.empty() ? dir.filename().string() : options.name);
  corpus.protocol = options.protocol;
  corpus.source = dir.string();
  corpus.origin = {{"kind", "files"}, {"name", corpus.name}, {"path", dir.string()}, {"protocol", options.protocol}};
  corpus.vocab = std::make_shared<const Vocabulary>(std::move(tokens->vocab));
  corpus.train = to_tensor(std::move(tokens->splits[0].ids));
  corpus.valid = to_tensor(std::move(tokens->splits[1].ids));
  corpus.test = to_tensor(std::move(tokens->splits[2].ids));
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return corpus;
}

std::string corpus_summary(const Corpus& c) {
  return "Corpus " + c.name + " (" + c.protocol + "): vocab " + integer_text(c.vocab->size()) + ", train " +
         integer_text(c.train.numel()) + ", valid " + integer_text(c.valid.numel()) + ", test " +
         integer_text(c.test.numel()) + " tokens; " + c.source;
}

const config::BoundOptions<EncodeOptions>& declared_options(config::Tag<EncodeOptions>) {
  static const config::BoundOptions<EncodeOptions> options(
      "encode", {{"eos", &EncodeOptions::eos, "append \"<eos>\""},
                 {"unk", &EncodeOptions::unk, "the word unknown words become (e.g. \"<unk>\"); nil: they are an error"}});
  return options;
}

torch::Tensor encode_text(const Vocabulary& vocab, const std::string& text, const EncodeOptions& options) {
  return to_tensor(vocab.encode(text, options.eos, options.unk));
}

}  // namespace lmkit::data
