// Where a named corpus and its token cache live.
//
// A corpus is a folder with train.txt, valid.txt, test.txt. It is looked up as: the explicit path,
// else $LMKIT_DATA/<name>, else ./data/<name>; when none exists the error names every folder tried
// and the command that downloads it (scripts/get_data.sh <name>).
//
// Its token cache goes next to it (<folder>/lmkit-<protocol>.tokens) when the folder is writable,
// else into a cache folder: the one given, else $LMKIT_CACHE_DIR, else $XDG_CACHE_HOME/lmkit, else
// ~/.cache/lmkit — named after the folder and a hash of its absolute path, so two corpora never
// share a file.
#pragma once
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "runtime/config/bound_options.h"

namespace lmkit::data {

// The canonical folder name of a corpus ("wt2" → "wikitext-2", "wt103" → "wikitext-103").
std::string canonical_corpus_name(const std::string& name);

// The folders searched for `name`, in order: the explicit path alone when given, else
// $LMKIT_DATA/<name>, ./data/<name>, then <root>/<name> for each of `more_roots` (recipes add the
// test data folder).
std::vector<std::filesystem::path> corpus_candidates(const std::string& name,
                                                     const std::optional<std::filesystem::path>& path,
                                                     const std::vector<std::filesystem::path>& more_roots = {});

// The first candidate that is a folder; throws EnvironmentError naming all candidates otherwise.
std::filesystem::path locate_corpus(const std::string& name, const std::optional<std::filesystem::path>& path,
                                    const std::vector<std::filesystem::path>& more_roots = {});

// locate_corpus as lmkit.data.locate asks it: an explicit path, and roots searched after the defaults.
struct LocateOptions {
  std::optional<std::string> path;
  std::vector<std::string> roots;
};
const config::BoundOptions<LocateOptions>& declared_options(config::Tag<LocateOptions>);
std::filesystem::path locate_folder(const std::string& name, const LocateOptions& options);

// True when new files can be created in `dir` (judged by its permission bits too, so a root user
// does not write into a folder that was made read-only on purpose).
bool directory_writable(const std::filesystem::path& dir);

// The cache file for `corpus_dir` read under `protocol` (see above).
std::filesystem::path cache_file_for(const std::filesystem::path& corpus_dir, const std::string& protocol,
                                     const std::optional<std::filesystem::path>& cache_dir);

}  // namespace lmkit::data
