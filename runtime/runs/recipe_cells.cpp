#include "runtime/runs/recipe_cells.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdint>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "runtime/config/json_text.h"
#include "runtime/core/atomic_file.h"
#include "runtime/core/error.h"
#include "runtime/core/interruption.h"
#include "runtime/core/number_text.h"
#include "runtime/core/preemption.h"

namespace lmkit::training {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

constexpr const char* kNonFiniteKey = "$non_finite";

// A float as Lua's tostring writes it ("%.14g", and "1.0" rather than "1"): cell ids were made so.
std::string lua_float_text(double v) {
  if (std::isnan(v)) return std::signbit(v) ? "-nan" : "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  char text[64];
  std::snprintf(text, sizeof text, "%.14g", v);
  std::string out(text);
  if (out.find_first_not_of("-0123456789") == std::string::npos) out += ".0";
  return out;
}

// A scalar as Lua's tostring writes it.
std::string lua_text(const json& v) {
  if (v.is_string()) return v.get<std::string>();
  if (v.is_boolean()) return v.get<bool>() ? "true" : "false";
  // A file's positive integers read back as unsigned; beyond Lua's integers they are floats there.
  if (v.is_number_unsigned()) {
    const auto u = v.get<std::uint64_t>();
    return u <= static_cast<std::uint64_t>(INT64_MAX) ? integer_text(u) : lua_float_text(static_cast<double>(u));
  }
  if (v.is_number_integer()) return integer_text(v.get<std::int64_t>());
  if (v.is_number_float()) return lua_float_text(v.get<double>());
  return v.dump();
}

bool is_scalar(const json& v) { return v.is_string() || v.is_boolean() || v.is_number(); }

// An empty Lua table arrives as an empty list: as a table of named values, it is an empty one.
json as_named(const json& v) { return v.is_array() && v.empty() ? json::object() : v; }

bool is_non_finite(const json& v) { return v.is_number_float() && !std::isfinite(v.get<double>()); }

// `value` with its non-finite numbers as texts, their key paths appended to `paths`.
json with_non_finite_as_text(const json& value, json& path, json& paths) {
  if (is_non_finite(value)) {
    paths.push_back(path);
    const double v = value.get<double>();
    return std::isnan(v) ? "NaN" : v > 0 ? "Infinity" : "-Infinity";
  }
  if (value.is_object()) {
    json out = json::object();
    for (auto it = value.begin(); it != value.end(); ++it) {
      path.push_back(it.key());
      out[it.key()] = with_non_finite_as_text(it.value(), path, paths);
      path.erase(path.size() - 1);
    }
    return out;
  }
  if (value.is_array()) {
    json out = json::array();
    for (std::size_t i = 0; i < value.size(); ++i) {
      path.push_back(static_cast<std::int64_t>(i + 1));  // as Lua numbers a list's entries
      out.push_back(with_non_finite_as_text(value[i], path, paths));
      path.erase(path.size() - 1);
    }
    return out;
  }
  return value;
}

// The shortest text that reads back as the same double (60.37, not 60.369999999999997); nan, inf
// and -inf as pandas and R read them.
std::string csv_number(const json& v) {
  if (v.is_number_integer()) return v.is_number_unsigned() ? integer_text(v.get<std::uint64_t>()) : integer_text(v.get<std::int64_t>());
  const double x = v.get<double>();
  if (std::isnan(x)) return "nan";
  if (std::isinf(x)) return x > 0 ? "inf" : "-inf";
  char text[64];
  for (int digits = 15; digits <= 17; ++digits) {
    std::snprintf(text, sizeof text, "%.*g", digits, x);
    if (std::strtod(text, nullptr) == x) return text;
  }
  return text;
}

std::string csv_field(const json& v) {
  if (v.is_number()) return csv_number(v);
  std::string text = lua_text(v);
  if (text.find_first_of(",\"\n\r") != std::string::npos) {
    std::string quoted = "\"";
    for (char c : text) quoted += c == '"' ? std::string("\"\"") : std::string(1, c);
    return quoted + "\"";
  }
  return text;
}

// A result's numbers as (name, value) rows: nested objects flattened with dots, lists with their
// 1-based positions (up to 32 entries; longer ones, spectra, stay in result.json).
void metric_rows(const json& value, const std::string& prefix, std::vector<std::pair<std::string, json>>& rows) {
  const auto add = [&](const std::string& name, const json& v) {
    if (v.is_object()) {
      metric_rows(v, name + ".", rows);
    } else if (v.is_array()) {
      if (v.size() <= 32) metric_rows(v, name + ".", rows);
    } else if (is_scalar(v)) {
      rows.emplace_back(name, v);
    }
  };
  if (value.is_object()) {
    for (auto it = value.begin(); it != value.end(); ++it) add(prefix + it.key(), it.value());
  } else if (value.is_array()) {
    for (std::size_t i = 0; i < value.size(); ++i) add(prefix + integer_text(static_cast<std::int64_t>(i + 1)), value[i]);
  }
}

// A JSON object from a file, none when it is missing or not an object.
std::optional<json> read_object(const fs::path& path) {
  std::ifstream in(path);
  if (!in) return std::nullopt;
  std::stringstream text;
  text << in.rdbuf();
  try {
    auto value = config::parse_json_text(text.str());
    if (value.is_object()) return value;
  } catch (const config::JsonTextError&) {
  }
  return std::nullopt;
}

// A setting's value in a message: strings quoted, tables as JSON.
std::string setting_text(const json& v) {
  if (v.is_string()) return v.dump();
  if (is_scalar(v)) return lua_text(v);
  return config::dump_json(v);
}

// The value of --set that gives a setting back.
std::string set_value(const json& v) { return is_scalar(v) ? lua_text(v) : config::dump_json(v); }

}  // namespace

std::string value_text(const json& value) { return lua_text(value); }

void check_recipe_cells(const std::string& recipe, const std::vector<std::string>& ids) {
  if (ids.empty()) throw UsageError("recipe " + recipe + ": grid() returned no cells");
  std::map<std::string, std::size_t> seen;
  for (std::size_t i = 0; i < ids.size(); ++i) {
    const auto [at, fresh] = seen.emplace(ids[i], i + 1);
    if (!fresh) {
      throw UsageError("recipe " + recipe + ": cells " + integer_text(static_cast<std::int64_t>(at->second)) + " and " +
                       integer_text(static_cast<std::int64_t>(i + 1)) + " are the same (" + ids[i] + ")");
    }
  }
}

void check_setting_choices(const std::string& recipe, const json& settings, const json& choices) {
  for (auto it = choices.begin(); choices.is_object() && it != choices.end(); ++it) {
    if (!it.value().is_array() || !settings.is_object() || !settings.contains(it.key())) continue;
    const auto& value = settings[it.key()];
    std::string allowed;
    bool found = false;
    for (const auto& choice : it.value()) {
      found = found || choice == value;
      allowed += (allowed.empty() ? "" : ", ") + lua_text(choice);
    }
    if (!found) {
      throw UsageError("recipe " + recipe + ": --set " + it.key() + "=" + lua_text(value) + " is not one of its values: " + allowed);
    }
  }
}

std::string cell_id(const json& given) {
  const auto fields = as_named(given);
  if (!fields.is_object()) throw UsageError("a cell's fields must be a table of named values, not a list");
  std::string id;
  for (auto it = fields.begin(); it != fields.end(); ++it) {
    if (!is_scalar(it.value())) continue;
    id += (id.empty() ? "" : ",") + it.key() + "=" + lua_text(it.value());
  }
  for (char& c : id) {
    const auto u = static_cast<unsigned char>(c);
    if (!(std::isalnum(u) && u < 0x80) && c != '.' && c != ',' && c != '=' && c != '_' && c != '-') c = '_';
  }
  return id.empty() ? "cell" : id;
}

std::string encode_cell_result(const json& result) {
  if (result.is_object() && result.contains(kNonFiniteKey)) {
    throw UsageError(std::string("a cell's result must not use the key '") + kNonFiniteKey +
                     "': result.json keeps its NaN and infinities there");
  }
  json path = json::array(), paths = json::array();
  auto stored = with_non_finite_as_text(result, path, paths);
  if (!paths.empty() && stored.is_object()) {
    std::sort(paths.begin(), paths.end(), [](const json& a, const json& b) {
      const auto joined = [](const json& p) {
        std::string text;
        for (const auto& k : p) text += (text.empty() ? "" : ".") + lua_text(k);
        return text;
      };
      return joined(a) < joined(b);
    });
    stored[kNonFiniteKey] = paths;
  }
  return config::dump_json(stored, 2);
}

json decode_cell_result(json stored) {
  if (!stored.is_object()) return stored;
  const auto listed = stored.find(kNonFiniteKey);
  if (listed == stored.end()) return stored;
  const json paths = *listed;
  stored.erase(kNonFiniteKey);
  if (!paths.is_array()) return stored;
  static const std::map<std::string, double> numbers = {{"NaN", std::nan("")},
                                                        {"Infinity", HUGE_VAL},
                                                        {"-Infinity", -HUGE_VAL}};
  for (const auto& keys : paths) {
    if (!keys.is_array() || keys.empty()) continue;
    json* at = &stored;
    for (const auto& key : keys) {
      if (at->is_object() && key.is_string() && at->contains(key.get<std::string>())) {
        at = &(*at)[key.get<std::string>()];
      } else if (at->is_array() && key.is_number_integer() && key.get<std::int64_t>() >= 1 &&
                 key.get<std::int64_t>() <= static_cast<std::int64_t>(at->size())) {
        at = &(*at)[static_cast<std::size_t>(key.get<std::int64_t>() - 1)];
      } else {
        at = nullptr;
        break;
      }
    }
    if (at && at->is_string()) {
      const auto number = numbers.find(at->get<std::string>());
      if (number != numbers.end()) *at = number->second;
    }
  }
  return stored;
}

std::string cell_folder(const std::string& out, const std::string& id) {
  // An empty folder would make the cells' paths absolute (/cells/<id>): never a recipe's folder.
  if (out.empty()) throw UsageError("the recipe's output folder is empty: give one (--set out=DIR)");
  return out + "/cells/" + id;
}

std::optional<json> read_cell_result(const std::string& out, const std::string& id) {
  auto stored = read_object(fs::path(cell_folder(out, id)) / "result.json");
  if (!stored) return std::nullopt;
  return decode_cell_result(std::move(*stored));
}

void write_cell_result(const std::string& out, const std::string& recipe, const RecipeCell& cell, const json& settings,
                       const json& given) {
  const auto result = as_named(given);
  if (!result.is_object()) {
    throw UsageError("recipe " + recipe + ": run() must return a table of named results for cell " + cell.id +
                     " ({test_ppl = ..., rank = ...}), not a list");
  }
  const auto text = encode_cell_result(result);  // refused before anything is written
  const auto folder = cell_folder(out, cell.id);
  std::error_code error;
  fs::create_directories(folder, error);
  write_file_atomically(folder + "/settings.json",
                        config::dump_json(json{{"recipe", recipe}, {"cell", cell.id}, {"fields", cell.fields}, {"settings", settings}}, 2));
  write_file_atomically(folder + "/result.json", text);
  fs::remove(folder + "/failed.json", error);
}

void record_cell_failure(const std::string& out, const std::string& id, const std::optional<std::string>& error,
                         const std::string& traceback) {
  const auto file = cell_folder(out, id) + "/failed.json";
  if (!error || was_interrupted() || was_preempted()) {
    std::error_code ignored;
    fs::remove(file, ignored);
    return;
  }
  std::error_code ignored;
  fs::create_directories(cell_folder(out, id), ignored);
  write_file_atomically(file, config::dump_json(json{{"error", *error}, {"traceback", traceback},
                                                      {"time", static_cast<std::int64_t>(std::time(nullptr))}}, 2));
}

std::optional<SettingsDifference> cell_settings_difference(const std::string& out, const std::string& id, const json& settings,
                                                           const json& defaults, const GridWithSetting& grid_with) {
  const auto file = fs::path(cell_folder(out, id)) / "settings.json";
  std::error_code error;
  if (!fs::exists(file, error)) return std::nullopt;  // a cell of an lmkit before settings were recorded
  const auto recorded = read_object(file);
  const auto then = recorded ? recorded->find("settings") : json::const_iterator();
  const bool empty_list = recorded && then != recorded->end() && then->is_array() && then->empty();
  SettingsDifference found;
  if (!recorded || then == recorded->end() || !(then->is_object() || empty_list)) {
    // A damaged record proves nothing: the result is not taken as this run's.
    found.texts.push_back("its settings.json is damaged, so its settings are unknown");
    found.sets.push_back("(unknown)");
    found.suffixes.push_back("new");
    return found;
  }
  // Whether `key` = `value` makes another grid than this run's (heads, seeds, a cell limit): such a
  // setting chooses cells and leaves a cell's own result alone.
  const auto sorted_ids = [&](const std::string& key, const json& value) {
    auto ids = grid_with ? grid_with(key, value) : std::nullopt;
    if (ids) std::sort(ids->begin(), ids->end());
    return ids;
  };
  for (auto it = settings.begin(); settings.is_object() && it != settings.end(); ++it) {
    const auto& key = it.key();
    const bool recorded_here = then->is_object() && then->contains(key);
    if (!recorded_here && !(defaults.is_object() && defaults.contains(key))) continue;
    const auto& then_value = recorded_here ? (*then)[key] : defaults[key];
    if (then_value == it.value()) continue;
    const auto now_grid = sorted_ids(key, it.value()), then_grid = sorted_ids(key, then_value);
    if (now_grid && then_grid && *now_grid != *then_grid) continue;
    found.texts.push_back(key + " = " + setting_text(then_value) + " there, " + setting_text(it.value()) + " now");
    found.sets.push_back("--set " + key + "=" + set_value(then_value));
    std::string suffix = key;
    for (char c : lua_text(it.value())) {
      if ((std::isalnum(static_cast<unsigned char>(c)) && static_cast<unsigned char>(c) < 0x80) || c == '.' || c == '-') suffix += c;
    }
    found.suffixes.push_back(suffix);
  }
  if (found.texts.empty()) return std::nullopt;
  return found;
}

void check_cells_settings(const std::string& recipe, const std::string& out, const std::vector<std::string>& ids,
                          const json& settings, const json& defaults, const GridWithSetting& grid_with, bool report_only) {
  // One answer per setting and value: a grid of many cells asks the recipe once.
  std::map<std::string, std::optional<std::vector<std::string>>> asked;
  const GridWithSetting cached = [&](const std::string& key, const json& value) {
    const auto question = key + "=" + value.dump();
    const auto known = asked.find(question);
    if (known != asked.end()) return known->second;
    return asked[question] = grid_with ? grid_with(key, value) : std::nullopt;
  };
  std::optional<SettingsDifference> first;
  std::vector<std::string> conflicting;
  for (const auto& id : ids) {
    if (!read_cell_result(out, id)) continue;
    if (auto found = cell_settings_difference(out, id, settings, defaults, cached)) {
      if (!first) first = std::move(found);
      conflicting.push_back(id);
    }
  }
  if (!first) return;
  const auto joined = [](const std::vector<std::string>& parts, const std::string& separator) {
    std::string text;
    for (const auto& p : parts) text += (text.empty() ? "" : separator) + p;
    return text;
  };
  const std::string which = conflicting.size() == 1
                                ? "cell " + conflicting[0]
                                : integer_text(static_cast<std::int64_t>(conflicting.size())) + " cells (" + conflicting[0] + ", ...)";
  const std::string way_out =
      report_only ? "Report it with the folder's settings (" + joined(first->sets, " ") +
                        "), or rerun those cells with these settings in another folder."
                  : "Use another output folder (--set out=" + out + "-" + joined(first->suffixes, "-") + "), the folder's settings (" +
                        joined(first->sets, " ") + "), or remove " + out + "/cells to run every cell again.";
  throw UsageError("recipe " + recipe + ": " + which + " in " + out + " hold" + (conflicting.size() == 1 ? "s" : "") +
                   " results made with other settings (" + joined(first->texts, "; ") + "); they would be reported as this run's. " +
                   way_out);
}

void write_tidy_results(const std::string& out, const std::vector<CellResult>& results) {
  std::vector<std::string> field_names;
  for (const auto& r : results) {
    for (auto it = r.cell.fields.begin(); r.cell.fields.is_object() && it != r.cell.fields.end(); ++it) {
      if (is_scalar(it.value()) && std::find(field_names.begin(), field_names.end(), it.key()) == field_names.end()) {
        field_names.push_back(it.key());
      }
    }
  }
  std::sort(field_names.begin(), field_names.end());
  std::string text = "cell";
  for (const auto& name : field_names) text += "," + csv_field(name);
  text += ",metric,value\n";
  for (const auto& r : results) {
    if (!r.result) continue;
    std::vector<std::pair<std::string, json>> rows;
    metric_rows(*r.result, "", rows);
    for (const auto& [name, value] : rows) {
      text += csv_field(r.cell.id);
      for (const auto& field : field_names) {
        const auto it = r.cell.fields.is_object() ? r.cell.fields.find(field) : r.cell.fields.end();
        text += "," + (r.cell.fields.is_object() && it != r.cell.fields.end() ? csv_field(*it) : std::string());
      }
      text += "," + csv_field(name) + "," + csv_field(value) + "\n";
    }
  }
  write_file_atomically(out + "/results.csv", text);
}

void store_cell_result(const std::string& out, const std::string& recipe, const std::string& id, const json& fields,
                       const json& settings, const json& result) {
  write_cell_result(out, recipe, RecipeCell{id, as_named(fields)}, as_named(settings), result);
}

void store_tidy_results(const std::string& out, const json& cells) {
  std::vector<CellResult> results;
  for (const auto& c : cells.is_array() ? cells : json::array()) {
    if (!c.is_object() || !c.contains("id") || !c.at("id").is_string()) throw UsageError("each cell is {id=, fields=}");
    RecipeCell cell{c.at("id").get<std::string>(), as_named(c.value("fields", json::object()))};
    // Each result read here, as result.json holds it (an older one's null in a list stays a gap).
    results.push_back({cell, read_cell_result(out, cell.id)});
  }
  write_tidy_results(out, results);
}

}  // namespace lmkit::training
