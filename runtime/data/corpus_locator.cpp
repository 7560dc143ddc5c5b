#include "runtime/data/corpus_locator.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>

#include "runtime/core/error.h"
#include "runtime/data/content_hash.h"

namespace lmkit::data {
namespace {

std::optional<std::string> env(const char* name) {
  const char* value = std::getenv(name);
  if (value == nullptr || *value == '\0') return std::nullopt;
  return std::string(value);
}

std::filesystem::path user_cache_dir() {
  if (auto dir = env("LMKIT_CACHE_DIR")) return *dir;
  if (auto dir = env("XDG_CACHE_HOME")) return std::filesystem::path(*dir) / "lmkit";
  if (auto home = env("HOME")) return std::filesystem::path(*home) / ".cache" / "lmkit";
  return std::filesystem::temp_directory_path() / "lmkit-cache";
}

}  // namespace

std::string canonical_corpus_name(const std::string& name) {
  if (name == "wt2") return "wikitext-2";
  if (name == "wt103") return "wikitext-103";
  if (name == "penn" || name == "penn-treebank") return "ptb";
  return name;
}

std::vector<std::filesystem::path> corpus_candidates(const std::string& name,
                                                     const std::optional<std::filesystem::path>& path,
                                                     const std::vector<std::filesystem::path>& more_roots) {
  if (path) return {*path};
  const std::string folder = canonical_corpus_name(name);
  std::vector<std::filesystem::path> candidates;
  if (auto root = env("LMKIT_DATA")) candidates.push_back(std::filesystem::path(*root) / folder);
  candidates.push_back(std::filesystem::path("data") / folder);
  for (const auto& root : more_roots) {
    if (!root.empty()) candidates.push_back(root / folder);
  }
  return candidates;
}

std::filesystem::path locate_corpus(const std::string& name, const std::optional<std::filesystem::path>& path,
                                    const std::vector<std::filesystem::path>& more_roots) {
  const auto candidates = corpus_candidates(name, path, more_roots);
  std::string tried;
  for (const auto& dir : candidates) {
    std::error_code ec;
    if (std::filesystem::is_directory(dir, ec)) return dir;
    tried += (tried.empty() ? "" : ", ") + dir.string();
  }
  const std::string folder = canonical_corpus_name(name);
  // Only the corpora scripts/get_data.sh knows are offered for download.
  const bool downloadable = folder == "ptb" || folder == "wikitext-2" || folder == "wikitext-103";
  if (path) {
    throw EnvironmentError("corpus folder " + path->string() + " does not exist (it should hold train.txt, "
                           "valid.txt, test.txt" +
                           (downloadable ? "; scripts/get_data.sh " + folder + " downloads it)" : std::string(")")));
  }
  throw EnvironmentError("corpus '" + name + "' not found (tried: " + tried + "); " +
                         (downloadable ? "download it with `scripts/get_data.sh " + folder + "`, or " : std::string()) +
                         "set LMKIT_DATA to the folder holding " + folder + "/, or pass path=");
}

bool directory_writable(const std::filesystem::path& dir) {
  struct stat info {};
  if (::stat(dir.c_str(), &info) != 0 || !S_ISDIR(info.st_mode)) return false;
  if ((info.st_mode & (S_IWUSR | S_IWGRP | S_IWOTH)) == 0) return false;
  return ::access(dir.c_str(), W_OK) == 0;
}

std::filesystem::path cache_file_for(const std::filesystem::path& corpus_dir, const std::string& protocol,
                                     const std::optional<std::filesystem::path>& cache_dir) {
  const std::string file = "lmkit-" + protocol + ".tokens";
  if (!cache_dir && directory_writable(corpus_dir)) return corpus_dir / file;
  std::error_code ec;
  auto absolute = std::filesystem::weakly_canonical(std::filesystem::absolute(corpus_dir, ec), ec);
  const std::string key = absolute.string();
  char hex[17];
  std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(hash_bytes(key.data(), key.size())));
  const std::string base = absolute.filename().empty() ? "corpus" : absolute.filename().string();
  return (cache_dir ? *cache_dir : user_cache_dir()) / (base + "-" + hex + "." + file);
}

const config::BoundOptions<LocateOptions>& declared_options(config::Tag<LocateOptions>) {
  static const config::BoundOptions<LocateOptions> options(
      "locate", {{"path", &LocateOptions::path, "the folder itself (nothing else is searched)"},
                 {"roots", &LocateOptions::roots, "folders searched for <root>/<name> after the defaults (\"\" skipped)"}});
  return options;
}

std::filesystem::path locate_folder(const std::string& name, const LocateOptions& options) {
  std::vector<std::filesystem::path> roots(options.roots.begin(), options.roots.end());
  return locate_corpus(name, options.path ? std::optional<std::filesystem::path>(*options.path) : std::nullopt, roots);
}

}  // namespace lmkit::data
