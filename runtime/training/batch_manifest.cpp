#include "runtime/training/batch_manifest.h"

#include <algorithm>
#include <fstream>
#include <sstream>

#include "runtime/config/cli_settings.h"
#include "runtime/config/json_text.h"
#include "runtime/core/atomic_file.h"
#include "runtime/core/error.h"
#include "runtime/core/folders.h"
#include "runtime/core/number_text.h"
#include "runtime/core/clock.h"
#include "runtime/training/process_pool.h"

namespace lmkit::training {
namespace {

using nlohmann::json;

std::string nth(const char* key, std::size_t i) { return "'" + std::string(key) + "'[" + integer_text(i + 1) + "]"; }

// The manifest in `document`, or the problem in words (which entry is not what lmkit writes).
std::string manifest_problem(const json& m) {
  if (!m.is_object()) return "it is not a JSON object";
  if (!m.contains("recipe") || !m["recipe"].is_string() || m["recipe"].get<std::string>().empty()) {
    return "'recipe' is not a script's path";
  }
  if (!m.contains("sets") || !m["sets"].is_array()) return "'sets' is not a list";
  for (std::size_t i = 0; i < m["sets"].size(); ++i) {
    const auto& s = m["sets"][i];
    std::string key;
    try {
      key = s.is_string() ? config::parse_setting(s.get<std::string>()).key : std::string();
    } catch (const ConfigError&) {
    }
    if (key.empty()) return nth("sets", i) + " is not a KEY=VALUE string";
    if (key == "task" || key == "report_only" || key == "dry_run" || key == "out") {
      return nth("sets", i) + " sets '" + key + "', which the batch sets itself";
    }
  }
  if (m.contains("format") && m["format"] != 1) return "'format' is " + m["format"].dump() + ": this lmkit reads format 1";
  if (m.contains("backend") && m["backend"].is_string() && m["backend"] != "local" && m["backend"] != "slurm") {
    return "'backend' is " + m["backend"].dump() + ", not \"local\" or \"slurm\"";
  }
  if (!m.contains("tasks") || !m["tasks"].is_array() || m["tasks"].empty()) return "'tasks' is not a non-empty list";
  for (std::size_t i = 0; i < m["tasks"].size(); ++i) {
    const auto& t = m["tasks"][i];
    if (!t.is_object() || !t.contains("id") || !t["id"].is_string() || !is_safe_cell_id(t["id"].get<std::string>())) {
      return nth("tasks", i) + " has no cell id that names a folder under cells/";
    }
  }
  for (const char* key : {"name", "description", "created", "backend", "lmkit"}) {
    if (m.contains(key) && !m[key].is_null() && !m[key].is_string()) return "'" + std::string(key) + "' is not a string";
  }
  // The name and the recipe go into the job script's lines: one line each.
  for (const char* key : {"name", "recipe", "lmkit"}) {
    if (m.contains(key) && m[key].is_string() && m[key].get<std::string>().find_first_of("\n\r") != std::string::npos) {
      return "'" + std::string(key) + "' holds a line break";
    }
  }
  if (m.contains("slurm_jobs") && !m["slurm_jobs"].is_null()) {
    if (!m["slurm_jobs"].is_array()) return "'slurm_jobs' is not a list";
    for (std::size_t i = 0; i < m["slurm_jobs"].size(); ++i) {
      const auto& job = m["slurm_jobs"][i];
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

std::string string_or(const json& m, const char* key, const std::string& fallback) {
  return m.contains(key) && m[key].is_string() ? m[key].get<std::string>() : fallback;
}

// The manifest in `m`, which has passed manifest_problem.
BatchManifest from_document(const json& m, const std::string& out) {
  BatchManifest manifest;
  manifest.out = out;
  manifest.recipe = m["recipe"].get<std::string>();
  std::string stem = manifest.recipe.substr(manifest.recipe.find_last_of('/') + 1);
  if (stem.size() > 4 && stem.compare(stem.size() - 4, 4, ".lua") == 0) stem.resize(stem.size() - 4);
  manifest.name = string_or(m, "name", stem);
  manifest.description = string_or(m, "description", "");
  manifest.created = string_or(m, "created", "");
  manifest.backend = string_or(m, "backend", "local");
  manifest.lmkit = string_or(m, "lmkit", "");
  for (const auto& s : m["sets"]) manifest.sets.push_back(s.get<std::string>());
  for (const auto& t : m["tasks"]) manifest.cells.push_back(t["id"].get<std::string>());
  if (m.contains("slurm_jobs") && m["slurm_jobs"].is_array()) {
    for (const auto& job : m["slurm_jobs"]) {
      SlurmSubmission s;
      s.job = job["job"].is_string() ? job["job"].get<std::string>() : integer_text(job["job"].get<std::int64_t>());
      if (job.contains("tasks")) s.tasks = job["tasks"].get<std::vector<std::int64_t>>();
      s.array = string_or(job, "array", "");
      s.submitted = string_or(job, "submitted", "");
      manifest.slurm_jobs.push_back(std::move(s));
    }
  }
  return manifest;
}

// The folder's manifest document: null when there is none; UsageError (`way_out` appended) when it
// is no JSON or not what lmkit writes.
json read_document(const std::string& file, const std::string& way_out) {
  if (!path_exists(file)) return nullptr;
  json document;
  try {
    document = config::parse_json_text(read_file(file, "batch manifest"));
  } catch (const config::JsonTextError& e) {
    throw UsageError(file + ": the batch manifest is damaged (not valid JSON: " + e.what() + "); " + way_out);
  }
  const auto problem = manifest_problem(document);
  if (!problem.empty()) throw UsageError(file + ": " + problem + "; " + way_out);
  return document;
}

// "; task 2 is x=9 there, x=2 now": the first task whose cell differs.
std::string first_difference(const std::vector<std::string>& there, const std::vector<std::string>& now) {
  for (std::size_t i = 0; i < std::min(there.size(), now.size()); ++i) {
    if (there[i] != now[i]) return "; task " + integer_text(i + 1) + " is " + there[i] + " there, " + now[i] + " now";
  }
  return "";
}

std::string listed(const std::vector<std::string>& sets) {
  if (sets.empty()) return "no --set";
  std::string text;
  for (const auto& s : sets) text += (text.empty() ? "" : " ") + s;
  return text;
}

}  // namespace

BatchPaths::BatchPaths(std::string folder)
    : out(std::move(folder)), batch(out + "/batch"), manifest(batch + "/manifest.json"), tasks(batch + "/tasks"),
      logs(batch + "/logs"), slurm(batch + "/slurm") {}

std::string BatchPaths::log(std::int64_t task) const { return logs + "/task-" + integer_text(task) + ".log"; }
std::string BatchPaths::task_record(std::int64_t task) const { return tasks + "/" + integer_text(task) + ".json"; }
std::string BatchPaths::result(const std::string& cell) const { return out + "/cells/" + cell + "/result.json"; }

bool is_safe_cell_id(const std::string& id) {
  if (id.empty() || id[0] == '/' || id.find('\0') != std::string::npos) return false;
  std::stringstream parts(id);
  std::string part;
  while (std::getline(parts, part, '/')) {
    if (part == "." || part == "..") return false;
  }
  return true;
}

BatchManifest read_batch_manifest(const std::string& dir) {
  const BatchPaths paths(dir);
  const auto document = read_document(
      paths.manifest, "`lmkit batch` with the same recipe and settings in a new folder (--set out=DIR) starts afresh");
  if (document.is_null()) {
    throw UsageError(dir + " is not a batch folder (no " + paths.manifest + "); `lmkit batch RECIPE --set out=" + dir +
                     "` makes one");
  }
  return from_document(document, dir);
}

BatchManifest reconcile_batch_manifest(const BatchGrid& grid, const std::string& out, const std::vector<std::string>& sets,
                                       const std::string& backend) {
  const BatchPaths paths(out);
  const auto document = read_document(paths.manifest, "move the folder aside or use another one (--set out=DIR)");
  BatchManifest manifest;
  if (!document.is_null()) {
    manifest = from_document(document, out);
    if (manifest.recipe == grid.path && manifest.sets == sets && manifest.cells != grid.cells) {
      throw UsageError(out + " already holds a batch of " + manifest.recipe + " with " + listed(sets) +
                       " whose cells differ from the grid's now (" + integer_text(manifest.cells.size()) + " there, " +
                       integer_text(grid.cells.size()) + " now" + first_difference(manifest.cells, grid.cells) +
                       "): the recipe changed since. Use another folder (--set out=DIR).");
    }
    if (manifest.recipe != grid.path || manifest.cells != grid.cells || manifest.sets != sets) {
      throw UsageError(out + " already holds a batch of " + manifest.recipe + " with " + listed(manifest.sets) + " (" +
                       integer_text(manifest.cells.size()) + " tasks); this one is " + grid.path + " with " +
                       listed(sets) + " (" + integer_text(grid.cells.size()) +
                       " tasks). Use another folder (--set out=DIR) or the same recipe and settings.");
    }
  } else {
    manifest.recipe = grid.path;
    manifest.name = grid.name;
    manifest.description = grid.description;
    manifest.sets = sets;
    manifest.cells = grid.cells;
    manifest.created = utc_timestamp();
  }
  manifest.out = out;
  manifest.backend = backend;
  manifest.lmkit = executable_path();  // the job script runs the lmkit that submitted it
  return manifest;
}

std::vector<std::string> task_arguments(const BatchManifest& manifest, std::optional<std::int64_t> task,
                                        std::optional<std::int64_t> threads) {
  std::vector<std::string> args = {"run", manifest.recipe};
  if (threads) args.insert(args.end(), {"--threads", integer_text(*threads)});
  for (const auto& s : manifest.sets) args.insert(args.end(), {"--set", s});
  args.insert(args.end(), {"--set", "out=" + manifest.out});
  if (task) args.insert(args.end(), {"--set", "task=" + integer_text(*task)});
  return args;
}

void write_batch_manifest(const BatchManifest& m) {
  json tasks = json::array();
  for (std::size_t i = 0; i < m.cells.size(); ++i) tasks.push_back({{"task", i + 1}, {"id", m.cells[i]}});
  json jobs = json::array();
  for (const auto& s : m.slurm_jobs) {
    jobs.push_back({{"job", s.job}, {"tasks", s.tasks}, {"array", s.array}, {"submitted", s.submitted}});
  }
  const json document = {{"format", 1},         {"recipe", m.recipe},   {"name", m.name},
                         {"description", m.description}, {"sets", m.sets}, {"tasks", tasks},
                         {"created", m.created}, {"backend", m.backend}, {"lmkit", m.lmkit},
                         {"slurm_jobs", jobs}};
  make_folder(BatchPaths(m.out).batch);
  write_file_atomically(BatchPaths(m.out).manifest, config::dump_json(document, 2) + "\n");
}

}  // namespace lmkit::training
