#include "runtime/runs/run_view.h"

#include <filesystem>

#include "runtime/core/error.h"
#include "runtime/core/number_text.h"
#include "runtime/heads/stored_head_config.h"
#include "runtime/models/checkpoint.h"
#include "runtime/models/run_id.h"
#include "runtime/runs/run_store.h"

namespace lmkit::training {

RunView::RunView(std::string dir, LanguageModel trained) : dir_(std::move(dir)), trained_(std::move(trained)) {}

nlohmann::json RunView::summary() const {
  RunStore store(dir_);
  if (!store.exists("summary.json")) throw UsageError("run '" + dir_ + "' has no summary.json yet (it has not ended)");
  return store.read_json("summary.json");
}

nlohmann::json RunView::metrics(const std::optional<std::string>& type) const {
  if (type && *type != "step" && *type != "epoch") throw UsageError("record type must be \"step\" or \"epoch\", got \"" + *type + "\"");
  // Streamed and filtered as read: the epochs of a run whose step records fill hundreds of megabytes
  // take the memory of the epochs alone.
  auto records = nlohmann::json::array();
  RunStore store(dir_);
  const auto reading = store.read_metrics([&](std::size_t, const nlohmann::json& record) {
    if (!type || record.value("type", std::string()) == *type) records.push_back(record);
  });
  if (reading.bad_line) throw EnvironmentError("metrics file '" + store.path("metrics.jsonl") + "' " + *reading.bad_line);
  return records;
}

nlohmann::json RunView::config() const { return RunStore(dir_).read_json("config.json"); }

LanguageModel RunView::best_model() const {
  if (trained_) return trained_;
  RunStore store(dir_);
  if (!store.exists("best.ckpt")) throw UsageError("run '" + dir_ + "' has no best.ckpt (no epoch finished)");
  auto checkpoint = load_checkpoint(store.path("best.ckpt"));
  auto model = checkpoint.model;
  model->eval();  // as lmkit.train's trained model and lmkit.load's: ready to evaluate
  if (!store.exists("config.json")) return model;
  const auto config = store.read_json("config.json");
  const auto own_id = run_id_in(config), stored_id = run_id_in(checkpoint.header);
  if (!own_id.empty() && !stored_id.empty() && own_id != stored_id) {
    throw UsageError("run '" + dir_ + "': best.ckpt was written by another run (run id " + stored_id +
                     ") than this one (run id " + own_id + ", in its config.json); it was copied "
                     "in from elsewhere. Put this run's own best.ckpt back, or read that file with lmkit.load(path)");
  }
  const auto found = config.find("model");
  if (found == config.end() || !found->is_object()) return model;
  // An option the encoder has retired since config.json was written, at its retired value: not a difference.
  const auto current = without_retired_options(*found);
  const auto* stored = &current;
  auto loaded = to_json(model->options);
  loaded["head"] = model->head->config();
  for (auto it = stored->begin(); it != stored->end(); ++it) {
    const auto other = loaded.find(it.key());
    // A head option added since config.json was written: compared as its default.
    const auto value = it.key() == "head" ? completed_head_config(it.value()) : it.value();
    if (other == loaded.end() || *other != value) {
      throw UsageError("run '" + dir_ + "': best.ckpt holds another model than config.json describes (model." + it.key() +
                       ": " + it.value().dump() + " in config.json, " +
                       (other == loaded.end() ? std::string("absent") : other->dump()) +
                       " in best.ckpt); was it copied from another run?");
    }
  }
  return model;
}

std::string RunView::describe() const {
  std::string text = "Run " + dir_;
  try {
    RunStore store(dir_);
    if (!store.exists("summary.json")) return text;
    const auto summary = store.read_json("summary.json");
    const auto status = summary.find("status");
    text += ": " + (status != summary.end() && status->is_string() ? status->get<std::string>() : std::string("?"));
    const auto ppl = summary.find("test_ppl");
    if (ppl != summary.end() && ppl->is_number()) text += ", test ppl " + describe_number(ppl->get<double>());
  } catch (const std::exception&) {
    text += ": summary.json unreadable";
  }
  return text;
}

std::shared_ptr<RunView> open_run(const std::string& dir) {
  if (!std::filesystem::is_directory(dir) || !std::filesystem::exists(std::filesystem::path(dir) / "config.json")) {
    throw UsageError("'" + dir + "' is not a run directory (no config.json)");
  }
  return std::make_shared<RunView>(dir);
}

}  // namespace lmkit::training
