#include "runtime/runs/run_status.h"

#include <algorithm>
#include <cmath>
#include <filesystem>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "runtime/core/error.h"
#include "runtime/core/file_lock.h"
#include "runtime/core/number_text.h"
#include "runtime/core/work_progress.h"
#include "runtime/runs/run_store.h"

namespace lmkit::training {
namespace {

std::optional<double> number_at(const nlohmann::json& object, const char* key) {
  const auto it = object.find(key);
  if (it == object.end() || !it->is_number()) return std::nullopt;
  return it->get<double>();
}

// A count (an epoch number, a number of epochs): a whole number in [0, 10^9], else nothing (a
// damaged or hostile file's 1e300 must not become an integer).
std::optional<std::int64_t> count_at(const nlohmann::json& object, const char* key) {
  const auto value = number_at(object, key);
  if (!value || !(*value >= 0 && *value <= 1e9) || *value != std::floor(*value)) return std::nullopt;
  return static_cast<std::int64_t>(*value);
}

// A value read from a file, for a message: a string as itself, anything else as JSON, cut at 80
// characters, control characters as '?' (the message goes to a terminal).
std::string printable_json(const nlohmann::json& value) {
  auto text = value.is_string() ? value.get<std::string>() : value.dump();
  if (text.size() > 80) text = text.substr(0, 77) + "...";
  for (auto& c : text) {
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) c = '?';
  }
  return text;
}

}  // namespace

RunStatus run_status(const std::string& dir, const std::string& curve_metric) {
  namespace fs = std::filesystem;
  if (!fs::is_directory(dir) || !fs::exists(fs::path(dir) / "config.json")) {
    throw UsageError("'" + dir + "' is not a run directory (no config.json)");
  }
  RunStatus status;
  status.dir = dir;
  RunStore store(dir);
  const auto config = store.read_json("config.json");
  if (const auto train = config.find("train"); train != config.end() && train->is_object()) {
    status.epochs = count_at(*train, "epochs").value_or(0) + count_at(*train, "finetune_epochs").value_or(0);
  }
  if (const auto model = config.find("model"); model != config.end() && model->is_object()) {
    const auto head = model->find("head");
    if (head != model->end() && head->is_object()) {
      const auto kind = head->value("kind", std::string());
      if (kind == "custom" || kind == "pointwise") {
        const auto name = head->find("name");
        status.lua_head = kind + (name != head->end() && name->is_string() ? " '" + name->get<std::string>() + "'" : "");
      }
    }
  }
  // metrics.jsonl, streamed: a file of any size in bounded memory. Its records must be this run's
  // (their run id is config.json's), and lines lmkit did not write stop the reading.
  const auto own_id = config.value("run_id", nlohmann::json());
  double seconds = 0;
  std::int64_t timed = 0, last_main = 0, main_epochs = 0, finetune_epochs = 0;
  std::optional<std::string> foreign;
  // The chosen curve keeps each epoch's last value; the names of the records' numbers are kept
  // up to a bound (a file of any content stays bounded).
  const auto add_point = [&](std::int64_t epoch, double value) {
    if (!status.metric_curve.empty() && status.metric_curve.back().first == epoch) {
      status.metric_curve.back().second = value;
    } else {
      status.metric_curve.emplace_back(epoch, value);
    }
  };
  const auto note_metrics = [&](const nlohmann::json& record) {
    for (auto it = record.begin(); it != record.end() && status.recorded_metrics.size() < 64; ++it) {
      const auto& key = it.key();
      if (it->is_number() && key != "epoch" && key != "step" && key != "batch" && key.size() <= 64) {
        status.recorded_metrics.insert(key);
      }
    }
  };
  const auto reading = store.read_metrics([&](std::size_t line, const nlohmann::json& record) {
    if (foreign) return;
    const auto id = record.find("run_id");
    if (own_id.is_string() && id != record.end() && *id != own_id) {
      foreign = "line " + integer_text(line) + " belongs to another run (run id " + printable_json(*id) +
                "; this run's, in config.json, is " + own_id.get<std::string>() +
                "): it was copied in from elsewhere";
      return;
    }
    const auto type = record.find("type");
    if (type != record.end() && *type == "recipe") {
      // A recipe's own numbers (run:record): at the epoch they were recorded in, counted on
      // through the finetune stage as the epochs are.
      const auto e = count_at(record, "epoch");
      const auto stage = record.find("stage");
      const bool finetune = stage != record.end() && *stage == "finetune";
      note_metrics(record);
      // Finetune's epoch 0 (the evaluation of the model it starts from) is no epoch of the curve:
      // it would take the last main epoch's place.
      if (const auto value = number_at(record, curve_metric.c_str()); value && e && !(finetune && *e == 0)) {
        add_point(*e + (finetune ? last_main : 0), *value);
      }
      return;
    }
    if (type == record.end() || *type != "epoch") return;
    note_metrics(record);
    if (const auto epoch = count_at(record, "epoch")) {
      const auto e = *epoch;
      const auto stage = record.find("stage");
      if (stage != record.end() && *stage == "finetune") {
        status.epoch = last_main + e;  // finetune epochs follow the main ones
        ++finetune_epochs;
      } else {
        status.epoch = e;
        last_main = std::max(last_main, e);
        ++main_epochs;
      }
    }
    if (const auto value = number_at(record, curve_metric.c_str())) add_point(status.epoch, *value);
    const auto valid = number_at(record, "valid_ppl");
    if (valid) {
      status.last_valid_ppl = valid;
      status.valid_curve.emplace_back(status.epoch, *valid);
      if (!status.best_valid_ppl || *valid < *status.best_valid_ppl) {
        status.best_valid_ppl = valid;
        status.best_epoch = status.epoch;
      }
    }
    if (const auto s = number_at(record, "epoch_seconds")) seconds += *s, ++timed;
  });
  if (foreign) {
    status.records_problem = *foreign;
  } else if (reading.bad_line) {
    status.records_problem = *reading.bad_line + " (lmkit did not write it: bytes appended, or the file edited)";
  }
  if (timed > 0) status.seconds_per_epoch = seconds / static_cast<double>(timed);

  nlohmann::json summary;  // summary.json, read once when nobody is training the run
  status.holder = FileLock::holder(dir);
  if (status.holder) {
    status.state = "running";
  } else if (store.exists("summary.json")) {
    summary = store.read_json("summary.json");
    const auto state = summary.is_object() ? summary.find("status") : summary.end();
    status.state = state != summary.end() && state->is_string() ? state->get<std::string>() : std::string("ended");
    if (summary.is_object()) {
      status.test_ppl = number_at(summary, "test_ppl");
      status.train_ppl = number_at(summary, "train_ppl");
    }
    if (const auto reason = summary.is_object() ? summary.find("stop_reason") : summary.end();
        summary.is_object() && reason != summary.end() && reason->is_string()) {
      status.stop_reason = reason->get<std::string>();
    }
  } else {
    status.state = "stopped";
  }
  // A finished run's records must hold the epochs its summary counts, the last line whole: a file
  // cut, emptied or extended since is not the run's record.
  if (status.records_problem.empty() && status.state == "finished" && summary.is_object()) {
    const auto epochs = count_at(summary, "epochs"), finetuned = count_at(summary, "finetune_epochs");
    if (reading.cut_last_line) {
      status.records_problem = "its last line is cut, though the run finished: the file was cut since";
    } else if ((epochs && *epochs != main_epochs) || (finetuned && *finetuned != finetune_epochs)) {
      status.records_problem = fmt::format(
          "it holds {} epoch record{}{}, while summary.json says the run trained {} epoch{}{}", main_epochs,
          main_epochs == 1 ? "" : "s", finetune_epochs > 0 ? fmt::format(" and {} finetune", finetune_epochs) : "",
          epochs.value_or(0), epochs.value_or(0) == 1 ? "" : "s",
          finetuned.value_or(0) > 0 ? fmt::format(" and {} finetune", *finetuned) : "");
    }
  }
  if (!status.records_problem.empty()) {
    // Not this run's numbers: none shown as its (summary.json's own test and train ppl stay).
    status.best_valid_ppl.reset();
    status.last_valid_ppl.reset();
    status.valid_curve.clear();
    status.metric_curve.clear();
    status.recorded_metrics.clear();
    status.seconds_per_epoch.reset();
    status.epoch = 0;
    status.best_epoch = 0;
  }
  status.resumable = !status.done() && status.records_problem.empty() && store.exists("state.ckpt");
  if (status.state == "running" && status.seconds_per_epoch && status.epochs > status.epoch) {
    status.eta_seconds = *status.seconds_per_epoch * static_cast<double>(status.epochs - status.epoch);
  }
  return status;
}

std::vector<std::string> RunStatus::lines() const {
  std::vector<std::string> out;
  std::string head = "Run " + dir + ": " + state;
  head += epochs > 0 ? fmt::format(", epoch {} of {}", epoch, epochs) : fmt::format(", epoch {}", epoch);
  if (best_valid_ppl) head += fmt::format(", best valid ppl {:.2f} (epoch {})", *best_valid_ppl, best_epoch);
  if (test_ppl) head += fmt::format(", test ppl {:.2f}", *test_ppl);
  out.push_back(head);
  if (holder) out.push_back("  training in " + *holder);
  if (seconds_per_epoch) {
    out.push_back(fmt::format("  {:.2f} s per epoch{}", *seconds_per_epoch,
                              eta_seconds ? ", about " + format_duration(*eta_seconds) + " left" : std::string()));
  }
  if (stop_reason) out.push_back("  " + *stop_reason);
  if (!records_problem.empty()) {
    out.push_back("  its metrics.jsonl is not this run's record: " + records_problem +
                  ". Its epochs are not shown; restore the run's own metrics.jsonl (or train it again)");
  }
  if (state == "stopped") out.push_back("  no process is training it and it left no summary: it was killed or lost its machine");
  if (resumable && state != "running") {
    if (lua_head.empty()) {
      out.push_back("  lmkit resume " + dir + " (or lmkit.resume(\"" + dir + "\") in Lua) continues it from its state.ckpt");
    } else {
      // config.json holds the head's parameters' names, not its code: the script that built it must
      // build it again.
      out.push_back("  lmkit.resume(\"" + dir + "\", {model = m}) continues it from its state.ckpt, m built as for the run "
                    "with its head written in Lua (" + lua_head + ")");
    }
  }
  return out;
}

}  // namespace lmkit::training
