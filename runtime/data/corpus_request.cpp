#include "runtime/data/corpus_request.h"

#include <filesystem>

#include "runtime/core/error.h"

namespace lmkit::data {
namespace {

const char* const kRealKeys[] = {"path", "protocol", "cache", "cache_dir"};
const char* const kSyntheticKeys[] = {"vocab", "states", "dim", "bias", "kind", "scale", "transition_scale",
                                      "seed", "train", "valid", "test"};

}  // namespace

std::string corpus_name(const std::optional<std::string>& name, const std::optional<std::string>& path) {
  if (name && !name->empty()) return *name;
  if (!path) return "synthetic";
  const auto folder = std::filesystem::path(*path).lexically_normal();
  std::string named = (folder.has_filename() ? folder.filename() : folder.parent_path().filename()).string();
  if (named.empty() || named == "." || named == "..") named = std::filesystem::weakly_canonical(folder).filename().string();
  return named;
}

bool reads_files(const CorpusRequest& request) { return corpus_name(request.name, request.path) != "synthetic"; }

Corpus make_corpus(const CorpusRequest& request, LoadReport* report) {
  const auto name = corpus_name(request.name, request.path);
  if (name == "synthetic") {
    for (const char* key : kRealKeys) {
      if (request.given.count(key)) throw UsageError("option '" + std::string(key) + "' is for real corpora, not name=\"synthetic\"");
    }
    SyntheticLanguage language(request.synthetic);
    return language.corpus(request.train.value_or(200000), request.valid.value_or(20000), request.test.value_or(20000));
  }
  for (const char* key : kSyntheticKeys) {
    if (request.given.count(key)) throw UsageError("option '" + std::string(key) + "' is for name=\"synthetic\" only");
  }
  CorpusOptions options;
  options.name = name;
  if (request.path) options.path = *request.path;
  options.protocol = request.protocol.value_or("full");
  options.cache = request.cache.value_or(true);
  if (request.cache_dir) options.cache_dir = *request.cache_dir;
  return load_corpus(options, report);
}

const config::BoundOptions<CorpusRequest>& declared_options(config::Tag<CorpusRequest>) {
  using R = CorpusRequest;
  using config::Range;
  static const config::BoundOptions<R> options(
      "corpus",
      [] {
        std::vector<config::BoundOption<R>> list = {
            {"name", &R::name, "\"ptb\", \"wikitext-2\"/\"wt2\", \"wikitext-103\", \"synthetic\"; nil: path's folder, or the built-in synthetic corpus"},
            {"path", &R::path, "the corpus folder (default: $LMKIT_DATA/<name>, then ./data/<name>)"},
            {"protocol", &R::protocol, config::OneOf{{"full", "mini"}},
             "full: train/valid/test.txt; mini: only valid.txt and test.txt (train = the first 90% of valid's lines); nil: full"},
            {"cache", &R::cache, "read and write the token cache (nil: true)"},
            {"cache_dir", &R::cache_dir, "where the token cache goes"}};
        for (auto& option : config::lifted(&R::synthetic)) list.push_back(std::move(option));
        list.push_back({"train", &R::train, Range::at_least(1), "synthetic: training tokens (nil: 200000)"});
        list.push_back({"valid", &R::valid, Range::at_least(1), "synthetic: validation tokens (nil: 20000)"});
        list.push_back({"test", &R::test, Range::at_least(1), "synthetic: test tokens (nil: 20000)"});
        return list;
      }(),
      &R::given);
  return options;
}

Corpus open_corpus(const CorpusRequest& request) {
  LoadReport report;
  auto corpus = make_corpus(request, reads_files(request) ? &report : nullptr);
  if (reads_files(request)) {
    corpus.from_cache = report.from_cache;
    corpus.cache_status = report.cache_status;
    if (!report.cache_file.empty()) corpus.cache_file = report.cache_file.string();
  }
  return corpus;
}

}  // namespace lmkit::data
