// A recipe's plan: what its cells still to run need, as a dry run prints it and as `lmkit batch`
// checks it before anything starts — the tasks by kind with their epochs, an estimate of their
// GPU-hours and device memory (the rates a recipe's `needs` gives, and the machine they were
// measured on), and whether each corpus's files are where the tasks will look (from this machine).
#pragma once
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace lmkit::training {

struct RecipePlan {
  std::vector<std::string> lines;     // "plan: 3 of 55 cells to run", one line per kind, the data
  std::vector<std::string> problems;  // what would fail tasks (a corpus's files missing), in words
};

// `request` = {out = the recipe's folder, cells = N (the grid's), declared = whether the recipe
// declares needs, needs = [{id=, need = {what=, epochs=, corpus = {name=, protocol=}, estimate =
// {gpu_hours=, peak_mb=, from=}, no_estimate=} | nil, failed = "why its needs failed" | nil}, ...]}
// for its cells; a finished cell (its result in `out`) needs nothing.
// Needs that failed or say something odd make a line of the plan, never a failure: an estimate
// without a number of GPU-hours is none, a corpus without a name is none, a protocol other than
// "full" or "mini" is "full".
RecipePlan plan_recipe(const nlohmann::json& request);
// The same as {lines = {...}, problems = {...}} (lmkit.process.plan).
nlohmann::json recipe_plan(const nlohmann::json& request);

}  // namespace lmkit::training
