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

}  // namespace lmkit::data
