// What a caller asks for when it asks for a corpus, and the one place that decides what that means:
// no name and no path is the built-in synthetic corpus; a path without a name is a real corpus named
// after its folder; name "synthetic" takes the synthetic language's options and split sizes, any
// other name the real corpus's (path, protocol, cache). Options of the other kind are refused by
// name, so that a typo does not silently load something else.
#pragma once
#include <cstdint>
#include <optional>
#include <set>
#include <string>

#include "runtime/config/bound_options.h"
#include "runtime/data/corpus.h"
#include "runtime/data/synthetic_language.h"

namespace lmkit::data {

struct CorpusRequest {
  std::optional<std::string> name;
  // Real corpora.
  std::optional<std::string> path;
  std::optional<std::string> protocol;
  std::optional<bool> cache;
  std::optional<std::string> cache_dir;
  // The synthetic corpus: the language (its fields as given, defaults elsewhere) and split sizes.
  SyntheticOptions synthetic;
  std::optional<std::int64_t> train, valid, test;
  // The options the caller set (their keys), for the refusals.
  std::set<std::string> given;
};

// "synthetic" without a path; the folder's name for a path (its canonical name for "." or "..").
std::string corpus_name(const std::optional<std::string>& name, const std::optional<std::string>& path);

// The corpus the request describes; report (real corpora) tells how the token cache was used.
// UsageError names an option given for the other kind of corpus.
Corpus make_corpus(const CorpusRequest& request, LoadReport* report = nullptr);

// The options of lmkit.data.corpus (`given` filled with the keys set), and the corpus with its
// loading facts (from_cache, cache_status, cache_file) filled in.
const config::BoundOptions<CorpusRequest>& declared_options(config::Tag<CorpusRequest>);
Corpus open_corpus(const CorpusRequest& request);

// Whether make_corpus reads files (and so fills a LoadReport).
bool reads_files(const CorpusRequest& request);

}  // namespace lmkit::data
