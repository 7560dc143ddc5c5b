#include "runtime/batch/batch_plan.h"

#include <filesystem>
#include <map>
#include <optional>

#include <fmt/format.h>

#include "runtime/core/error.h"
#include "runtime/core/number_text.h"
#include "runtime/data/corpus_locator.h"
#include "runtime/runs/recipe_cells.h"

namespace lmkit::training {
namespace {

using nlohmann::json;
namespace fs = std::filesystem;

// The files a corpus protocol reads (docs/data.md): the mini protocol trains on the validation split.
std::vector<std::string> protocol_files(const std::string& protocol) {
  if (protocol == "mini") return {"valid.txt", "test.txt"};
  return {"train.txt", "valid.txt", "test.txt"};
}

std::string joined(const std::vector<std::string>& parts, const std::string& separator) {
  std::string text;
  for (const auto& p : parts) text += (text.empty() ? "" : separator) + p;
  return text;
}

struct Group {
  std::string what, epochs, cost;
  std::int64_t n = 0;
};

struct CorpusNeed {
  std::string name, protocol;
  std::int64_t n = 0;
};

}  // namespace

RecipePlan plan_recipe(const json& request) {
  RecipePlan plan;
  const auto cells = request.value("cells", json(0));
  const auto total = cells.is_number_integer() ? cells.get<std::int64_t>() : 0;
  if (!request.value("declared", false)) {
    plan.lines.push_back(fmt::format("plan: {} cells (the recipe declares no needs: no estimate, no data check)", total));
    return plan;
  }
  const auto needs = request.value("needs", json::array());
  std::vector<Group> groups;
  std::map<std::string, std::size_t> group_of;
  std::vector<CorpusNeed> corpora;
  std::map<std::string, std::size_t> corpus_of;
  double total_hours = 0;
  std::optional<std::string> machine;
  const auto out = request.value("out", std::string());
  std::int64_t todo = 0;
  for (const auto& entry : needs.is_array() ? needs : json::array()) {
    const auto id = entry.is_object() && entry.contains("id") && entry["id"].is_string() ? entry["id"].get<std::string>() : "cell";
    if (!out.empty() && read_cell_result(out, id)) continue;
    ++todo;
    json need = entry.contains("need") && entry["need"].is_object() ? entry["need"] : json();
    if (need.is_null()) {
      const auto failed = entry.value("failed", std::string("it returned no table"));
      need = {{"what", id}, {"no_estimate", "its needs failed: " + failed}};
    }
    const auto what = need.contains("what") && !need["what"].is_null() ? value_text(need["what"]) : id;
    const auto epochs = need.contains("epochs") && !need["epochs"].is_null() ? value_text(need["epochs"]) : std::string("?");
    std::optional<double> hours, peak;
    std::string from;
    if (const auto e = need.find("estimate"); e != need.end() && e->is_object() && e->contains("gpu_hours") &&
                                             (*e)["gpu_hours"].is_number()) {
      hours = (*e)["gpu_hours"].get<double>();
      if (e->contains("peak_mb") && (*e)["peak_mb"].is_number()) peak = (*e)["peak_mb"].get<double>();
      if (e->contains("from") && (*e)["from"].is_string()) from = (*e)["from"].get<std::string>();
    }
    const auto key = what + "|" + epochs;
    if (!group_of.count(key)) {
      group_of[key] = groups.size();
      std::string cost;
      if (hours) {
        cost = fmt::format("about {:.2f} GPU-hours{} each", *hours, peak ? fmt::format(", {:.0f} MB on the device", *peak) : "");
      } else if (need.contains("no_estimate") && need["no_estimate"].is_string()) {
        cost = need["no_estimate"].get<std::string>();
      } else {
        cost = "no estimate";
      }
      groups.push_back({what, epochs, cost, 0});
    }
    ++groups[group_of[key]].n;
    if (hours) {
      total_hours += *hours;
      if (!machine && !from.empty()) machine = from;
    }
    if (const auto c = need.find("corpus"); c != need.end() && c->is_object() && c->contains("name") && (*c)["name"].is_string()) {
      const auto name = (*c)["name"].get<std::string>();
      auto protocol = c->contains("protocol") && (*c)["protocol"].is_string() ? (*c)["protocol"].get<std::string>() : "full";
      if (protocol != "mini") protocol = "full";
      const auto corpus_key = name + "|" + protocol;
      if (!corpus_of.count(corpus_key)) {
        corpus_of[corpus_key] = corpora.size();
        corpora.push_back({name, protocol, 0});
      }
      ++corpora[corpus_of[corpus_key]].n;
    }
  }
  plan.lines.insert(plan.lines.begin(), fmt::format("plan: {} of {} cells to run", todo, total));
  for (const auto& g : groups) plan.lines.push_back(fmt::format("  {} × {}: {} epochs, {}", g.n, g.what, g.epochs, g.cost));
  if (total_hours > 0) {
    plan.lines.push_back(fmt::format("  in all about {:.1f} GPU-hours ({})", total_hours, machine.value_or("measured rates")));
  }
  for (const auto& c : corpora) {
    std::optional<fs::path> folder;
    try {
      folder = data::locate_corpus(c.name, std::nullopt);
    } catch (const std::exception&) {
    }
    std::vector<std::string> missing;
    for (const auto& file : protocol_files(c.protocol)) {
      std::error_code error;
      if (!folder || !fs::exists(*folder / file, error)) missing.push_back(file);
    }
    if (missing.empty()) {
      plan.lines.push_back(fmt::format("  data: {} ({} protocol) in {}", c.name, c.protocol, folder->string()));
      continue;
    }
    std::string where;
    if (folder) {
      where = "not in " + folder->string();
    } else {
      std::vector<std::string> tried;
      for (const auto& candidate : data::corpus_candidates(c.name, std::nullopt)) tried.push_back(candidate.string());
      where = "no " + c.name + "/ folder where lmkit looks (tried: " + joined(tried, ", ") + ")";
    }
    plan.problems.push_back(fmt::format("{} task{} need{} {}'s {} ({} protocol), {}: get it with scripts/get_data.sh {}, or set "
                                        "LMKIT_DATA to the folder that holds {}/",
                                        c.n, c.n == 1 ? "" : "s", c.n == 1 ? "s" : "", c.name, joined(missing, ", "), c.protocol,
                                        where, c.name, c.name));
    plan.lines.push_back("  data MISSING: " + plan.problems.back());
  }
  return plan;
}

json recipe_plan(const json& request) {
  const auto plan = plan_recipe(request);
  return {{"lines", plan.lines}, {"problems", plan.problems}};
}

}  // namespace lmkit::training
