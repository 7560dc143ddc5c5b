#include "runtime/runs/recipe_record.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <random>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include "runtime/config/cli_settings.h"
#include "runtime/config/json_text.h"
#include "runtime/core/atomic_file.h"
#include "runtime/core/error.h"
#include "runtime/core/folders.h"
#include "runtime/core/number_text.h"
#include "runtime/core/process_facts.h"

namespace lmkit::training {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

constexpr int kRecordFormat = 2;

std::string nth(const char* key, std::size_t i) { return "'" + std::string(key) + "'[" + integer_text(i + 1) + "]"; }

bool has_control_character(const std::string& text) {
  return std::any_of(text.begin(), text.end(), [](char c) { return static_cast<unsigned char>(c) < 0x20 || c == 0x7F; });
}

std::string string_or(const json& m, const char* key, const std::string& fallback) {
  return m.contains(key) && m[key].is_string() ? m[key].get<std::string>() : fallback;
}

// The --set settings a record keeps: KEY=VALUE strings, none of them the runner's own.
std::string sets_problem(const json& sets) {
  if (!sets.is_array()) return "'sets' is not a list";
  for (std::size_t i = 0; i < sets.size(); ++i) {
    std::string key;
    try {
      key = sets[i].is_string() ? config::parse_setting(sets[i].get<std::string>()).key : std::string();
    } catch (const ConfigError&) {
    }
    if (key.empty()) return nth("sets", i) + " is not a KEY=VALUE string";
    if (is_runner_setting(key)) {
      return nth("sets", i) + " sets '" + key + "', which the batch sets itself";
    }
  }
  return "";
}

std::string cells_problem(const json& cells, const char* key, bool objects) {
  if (!cells.is_array() || cells.empty()) return "'" + std::string(key) + "' is not a non-empty list";
  for (std::size_t i = 0; i < cells.size(); ++i) {
    const auto& entry = objects ? (cells[i].is_object() && cells[i].contains("id") ? cells[i]["id"] : json()) : cells[i];
    const auto id = entry.is_string() ? entry.get<std::string>() : std::string();
    // lmkit's ids are one folder name each (recipe_cells.h's cell_id): never a path.
    if (!is_safe_cell_id(id) || has_control_character(id) || id.find('/') != std::string::npos) {
      return nth(key, i) + " has no cell id that names a folder under cells/";
    }
  }
  return "";
}

std::string batch_problem(const json& b) {
  if (!b.is_object()) return "'batch' is not an object";
  if (b.contains("backend") && !b["backend"].is_null() && b["backend"] != "local" && b["backend"] != "slurm") {
    return "'backend' is " + b["backend"].dump() + ", not \"local\" or \"slurm\"";
  }
  for (const char* key : {"created", "backend", "lmkit"}) {
    if (b.contains(key) && !b[key].is_null() && !b[key].is_string()) return "'" + std::string(key) + "' is not a string";
  }
  if (b.contains("lmkit") && b["lmkit"].is_string() && b["lmkit"].get<std::string>().find_first_of("\n\r") != std::string::npos) {
    return "'lmkit' holds a line break";
  }
  if (b.contains("slurm_jobs") && !b["slurm_jobs"].is_null()) {
    if (!b["slurm_jobs"].is_array()) return "'slurm_jobs' is not a list";
    for (std::size_t i = 0; i < b["slurm_jobs"].size(); ++i) {
      const auto& job = b["slurm_jobs"][i];
      const bool job_ok = job.is_object() && job.contains("job") && (job["job"].is_string() || job["job"].is_number_integer());
      bool tasks_ok = job_ok && (!job.contains("tasks") || job["tasks"].is_array());
      if (tasks_ok && job.contains("tasks")) {
        for (const auto& t : job["tasks"]) tasks_ok = tasks_ok && t.is_number_integer();
      }
      if (!tasks_ok) return nth("slurm_jobs", i) + " is not a submission ({job=, tasks=})";
    }
  }
  return "";
}

// The name and the recipe go into a job script's lines: one line each.
std::string one_line_problem(const json& m) {
  for (const char* key : {"name", "description", "recipe"}) {
    if (m.contains(key) && !m[key].is_null() && !m[key].is_string()) return "'" + std::string(key) + "' is not a string";
  }
  for (const char* key : {"name", "recipe"}) {
    if (m.contains(key) && m[key].is_string() && m[key].get<std::string>().find_first_of("\n\r") != std::string::npos) {
      return "'" + std::string(key) + "' holds a line break";
    }
  }
  return "";
}

// recipe.json (format 2, or 1: an `lmkit run` of before, without "format"): what in it is not what
// lmkit writes, "" when it is all right.
std::string record_problem(const json& m) {
  if (!m.is_object()) return "it is not a JSON object";
  if (m.contains("format") && m["format"] != kRecordFormat) {
    return "'format' is " + m["format"].dump() + ": this lmkit reads format " + integer_text(kRecordFormat);
  }
  const auto settings = m.find("settings");
  // A recipe without settings wrote them as an empty JSON array (an empty Lua table).
  if (settings == m.end() || !(settings->is_object() || (settings->is_array() && settings->empty()))) {
    return "it lacks its settings";
  }
  if (!m.contains("cells")) return "it lacks its cells";
  if (auto problem = cells_problem(m["cells"], "cells", false); !problem.empty()) return problem;
  if (m.contains("sets")) {
    if (auto problem = sets_problem(m["sets"]); !problem.empty()) return problem;
  }
  if (m.contains("batch") && !m["batch"].is_null()) {
    if (auto problem = batch_problem(m["batch"]); !problem.empty()) return problem;
    if (!m.contains("recipe") || !m["recipe"].is_string() || m["recipe"].get<std::string>().empty()) {
      return "'recipe' is not a script's path";
    }
  }
  return one_line_problem(m);
}

// An older lmkit batch's batch/manifest.json (format 1).
std::string manifest_problem(const json& m) {
  if (!m.is_object()) return "it is not a JSON object";
  if (!m.contains("recipe") || !m["recipe"].is_string() || m["recipe"].get<std::string>().empty()) {
    return "'recipe' is not a script's path";
  }
  if (!m.contains("sets")) return "'sets' is not a list";
  if (auto problem = sets_problem(m["sets"]); !problem.empty()) return problem;
  if (m.contains("format") && m["format"] != 1) return "'format' is " + m["format"].dump() + ": this lmkit reads format 1";
  if (!m.contains("tasks")) return "'tasks' is not a non-empty list";
  if (auto problem = cells_problem(m["tasks"], "tasks", true); !problem.empty()) return problem;
  if (auto problem = batch_problem(json{{"backend", m.value("backend", json("local"))},
                                        {"created", m.value("created", json())},
                                        {"lmkit", m.value("lmkit", json())},
                                        {"slurm_jobs", m.value("slurm_jobs", json())}});
      !problem.empty()) {
    return problem;
  }
  return one_line_problem(m);
}

BatchSection batch_of(const json& b) {
  BatchSection batch;
  batch.backend = string_or(b, "backend", "local");
  batch.created = string_or(b, "created", "");
  batch.lmkit = string_or(b, "lmkit", "");
  if (b.contains("slurm_jobs") && b["slurm_jobs"].is_array()) {
    for (const auto& job : b["slurm_jobs"]) {
      SlurmSubmission s;
      s.job = job["job"].is_string() ? job["job"].get<std::string>() : integer_text(job["job"].get<std::int64_t>());
      if (job.contains("tasks")) s.tasks = job["tasks"].get<std::vector<std::int64_t>>();
      s.array = string_or(job, "array", "");
      s.submitted = string_or(job, "submitted", "");
      batch.slurm_jobs.push_back(std::move(s));
    }
  }
  return batch;
}

std::string stem_of(const std::string& recipe) {
  std::string stem = recipe.substr(recipe.find_last_of('/') + 1);
  if (stem.size() > 4 && stem.compare(stem.size() - 4, 4, ".lua") == 0) stem.resize(stem.size() - 4);
  return stem;
}

// The document in `file`: null when there is none; UsageError when it is no JSON or `problem` finds
// something lmkit does not write.
json read_document(const std::string& file, const char* what, std::string (*problem_of)(const json&),
                   const std::string& way_out) {
  if (!path_exists(file)) return nullptr;
  json document;
  try {
    document = config::parse_json_text(read_file(file, what));
  } catch (const config::JsonTextError& e) {
    throw UsageError(file + ": the " + std::string(what) + " is damaged (not valid JSON: " + e.what() + "); " + way_out);
  }
  const auto problem = problem_of(document);
  if (!problem.empty()) throw UsageError(file + ": " + problem + "; " + way_out);
  return document;
}

}  // namespace

const std::vector<RunnerSetting>& runner_settings() {
  static const std::vector<RunnerSetting> settings = {
      {"out", "", "the output folder (results, report; default runs/<recipe>-<scale>)"},
      {"task", 0, "> 0: run only cell I (a batch array task)"},
      {"report_only", false, "render the report from the cells that have finished"},
      {"dry_run", false, "resolve the settings, list the cells, the plan and the output folder, run nothing"},
  };
  return settings;
}

bool is_runner_setting(const std::string& key) {
  for (const auto& s : runner_settings()) {
    if (s.key == key) return true;
  }
  return false;
}

json runner_settings_table() {
  json table = json::array();
  for (const auto& s : runner_settings()) table.push_back({{"key", s.key}, {"default", s.value}, {"doc", s.doc}});
  return table;
}

std::string default_recipe_folder(const std::string& name, const std::string& scale) {
  return "runs/" + name + "-" + (scale.empty() ? std::string("default") : scale);
}

bool is_safe_cell_id(const std::string& id) {
  if (id.empty() || id[0] == '/' || id.find('\0') != std::string::npos) return false;
  std::stringstream parts(id);
  std::string part;
  while (std::getline(parts, part, '/')) {
    if (part == "." || part == "..") return false;
  }
  return true;
}

nlohmann::json read_json_object(const std::filesystem::path& path) {
  std::ifstream in(path);
  if (!in) throw EnvironmentError("cannot read '" + path.string() + "': " + std::strerror(errno));
  std::stringstream text;
  text << in.rdbuf();
  nlohmann::json value;
  try {
    value = config::parse_json_text(text.str());  // nesting bounded: the file is untrusted
  } catch (const config::JsonTextError&) {
    value = nlohmann::json();
  }
  if (!value.is_object()) {
    throw EnvironmentError("'" + path.string() + "' is not a JSON object: was it cut short? `lmkit run` of the recipe rewrites it");
  }
  return value;
}

std::optional<RecipeRecord> find_recipe_record(const std::string& dir, const std::string& way_out) {
  const auto record_file = dir + "/recipe.json", manifest_file = dir + "/batch/manifest.json";
  const auto document = read_document(record_file, "recipe record", record_problem, way_out);
  // An older batch's manifest is read only where the record has no batch of its own (a leftover
  // beside a record of this lmkit is not looked at).
  const bool has_batch = !document.is_null() && document.contains("batch") && !document["batch"].is_null();
  const auto manifest = has_batch ? json() : read_document(manifest_file, "batch manifest", manifest_problem, way_out);
  if (document.is_null() && manifest.is_null()) return std::nullopt;
  RecipeRecord record;
  record.out = dir;
  if (!document.is_null()) {
    record.recipe = string_or(document, "recipe", "");
    record.name = string_or(document, "name", record.recipe.empty() ? std::string("?") : stem_of(record.recipe));
    record.description = string_or(document, "description", "");
    const auto& settings = document["settings"];
    record.settings = settings.is_object() ? settings : json::object();
    if (document.contains("sets")) record.sets = document["sets"].get<std::vector<std::string>>();
    record.cells = document["cells"].get<std::vector<std::string>>();
    if (document.contains("batch") && !document["batch"].is_null()) record.batch = batch_of(document["batch"]);
  }
  if (!manifest.is_null() && !record.batch) {
    // An older batch: its manifest holds the batch, its --set settings and its tasks' cells.
    record.recipe = manifest["recipe"].get<std::string>();
    record.name = string_or(manifest, "name", stem_of(record.recipe));
    record.description = string_or(manifest, "description", record.description);
    record.sets = manifest["sets"].get<std::vector<std::string>>();
    // A recipe.json beside it was a whole `lmkit run`'s, of settings not necessarily the batch's:
    // the batch's --set settings are what its tasks run with.
    record.settings.reset();
    record.cells.clear();
    for (const auto& t : manifest["tasks"]) record.cells.push_back(t["id"].get<std::string>());
    record.batch = batch_of(manifest);
  }
  return record;
}

RecipeRecord read_recipe_record(const std::string& dir) {
  auto record = find_recipe_record(dir, "remove it; `lmkit run RECIPE --set out=" + dir + "` then writes it anew");
  if (!record) {
    throw UsageError(dir + " holds no recipe's record (no recipe.json); `lmkit run RECIPE --set out=" + dir +
                     "` or `lmkit batch RECIPE --set out=" + dir + "` makes one");
  }
  return *record;
}

namespace {

std::string record_text(const RecipeRecord& r) {
  json document = {{"format", kRecordFormat}, {"recipe", r.recipe},  {"name", r.name}, {"description", r.description},
                   {"settings", r.settings ? *r.settings : json::object()}, {"sets", r.sets}, {"cells", r.cells}};
  if (r.batch) {
    json jobs = json::array();
    for (const auto& s : r.batch->slurm_jobs) {
      jobs.push_back({{"job", s.job}, {"tasks", s.tasks}, {"array", s.array}, {"submitted", s.submitted}});
    }
    document["batch"] = {{"backend", r.batch->backend}, {"created", r.batch->created}, {"lmkit", r.batch->lmkit},
                         {"slurm_jobs", jobs}};
  }
  return config::dump_json(document, 2) + "\n";
}

}  // namespace

void write_recipe_record(const RecipeRecord& r) {
  make_folder(r.out);
  write_file_atomically(r.out + "/recipe.json", record_text(r));
  std::error_code ignored;
  fs::remove(r.out + "/batch/manifest.json", ignored);  // an older batch's record, now in recipe.json
}

std::string settings_change(const json& recorded, const json& now, const json& defaults) {
  std::string text;
  for (auto it = now.begin(); now.is_object() && it != now.end(); ++it) {
    const auto& key = it.key();
    const auto there = recorded.is_object() ? recorded.find(key) : recorded.end();
    const bool recorded_here = recorded.is_object() && there != recorded.end();
    const bool has_default = defaults.is_object() && defaults.contains(key);
    if (!recorded_here && !has_default) continue;  // nothing to compare it with
    const auto& then = recorded_here ? *there : defaults[key];
    if (then == it.value()) continue;
    text += (text.empty() ? "" : "; ") + key + " = " + then.dump() + " there, " + it.value().dump() + " now";
  }
  return text;
}

namespace {

json settings_object(const std::string& text, const char* what) {
  json value;
  try {
    value = config::parse_json_text(text);
  } catch (const config::JsonTextError& e) {
    throw UsageError(std::string("the recipe's ") + what + " are not JSON: " + e.what());
  }
  if (value.is_array() && value.empty()) value = json::object();
  if (!value.is_object()) throw UsageError(std::string("the recipe's ") + what + " must be a JSON object");
  return value;
}

// Writes `text` as `path` unless a file is there already (another writer's, kept); true when it
// wrote. A temporary file (named by host, process and a random number: a shared filesystem's
// writers on other machines) linked into place, which fails rather than replaces; where the
// filesystem has no links, an exclusive create.
bool create_unless_there(const std::string& path, const std::string& text) {
  std::random_device random;
  const auto temporary = path + ".new-" + host_name() + "-" + integer_text(static_cast<std::int64_t>(::getpid())) + "-" +
                         integer_text(static_cast<std::int64_t>(random()));
  write_file_atomically(temporary, text);
  const int linked = ::link(temporary.c_str(), path.c_str());
  const int error = errno;
  if (linked == 0 || error == EEXIST) {
    std::error_code ignored;
    fs::remove(temporary, ignored);
    return linked == 0;
  }
  if (error != EPERM && error != ENOTSUP && error != EOPNOTSUPP && error != ENOSYS) {
    std::error_code ignored;
    fs::remove(temporary, ignored);
    throw EnvironmentError("cannot write '" + path + "': " + std::strerror(error));
  }
  std::error_code ignored;
  fs::remove(temporary, ignored);
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0) {
    if (errno == EEXIST) return false;
    throw EnvironmentError("cannot write '" + path + "': " + std::strerror(errno));
  }
  const bool written = ::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
  ::close(fd);
  if (!written) throw EnvironmentError("cannot write '" + path + "': the disk is full?");
  return true;
}

}  // namespace

void record_recipe_run(const std::string& out, const std::string& recipe, const std::string& name,
                       const std::string& description, const std::string& settings_json, const std::string& defaults_json,
                       const std::vector<std::string>& cells, bool task) {
  if (out.empty()) throw UsageError("the recipe's output folder is empty: give one (--set out=DIR)");
  const auto settings = settings_object(settings_json, "settings");
  const auto defaults = settings_object(defaults_json, "defaults");
  const std::string way_out = "remove it, or use another output folder (--set out=DIR)";
  auto record = find_recipe_record(out, way_out);
  RecipeRecord fresh;
  fresh.out = out;
  fresh.recipe = recipe;
  fresh.name = name;
  fresh.description = description;
  fresh.settings = settings;
  fresh.cells = cells;
  if (!record) {
    // A folder without a record gets this run's, unless another writer (a batch starting on it)
    // wrote one meanwhile: then that one decides, as if it had been there.
    make_folder(out);
    if (create_unless_there(out + "/recipe.json", record_text(fresh)) || task) return;
    record = find_recipe_record(out, way_out);
  }
  // A task run by hand never writes over a record.
  if (task) return;
  if (record && record->batch) {
    // A batch's record numbers its tasks by its cells and runs them with its settings: a whole run
    // goes on in its folder only with both, and leaves the record as the batch wrote it.
    if (record->cells != cells) {
      throw UsageError(out + " holds a batch of " + record->recipe + " whose cells differ from this run's (" +
                       integer_text(record->cells.size()) + " there, " + integer_text(cells.size()) +
                       " now): its tasks are numbered by them. Run with the batch's settings, or use another output " +
                       "folder (--set out=DIR).");
    }
    if (record->settings) {
      const auto change = settings_change(*record->settings, settings, defaults);
      if (!change.empty()) {
        throw UsageError(out + " holds a batch of " + record->recipe + " with other settings (" + change +
                         "): its tasks run with them. Run with the batch's settings, or use another output folder " +
                         "(--set out=DIR).");
      }
    }
    return;
  }
  write_recipe_record(fresh);
}

}  // namespace lmkit::training
