// A run's directory as a script reads it (lmkit.open_run, and the Run lmkit.train returns): its
// summary, metrics, configuration and best model. The model that trained in this process, when
// given, is the best model once its run has ended (the run loads best.ckpt into it).
#pragma once
#include <memory>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "runtime/models/language_model.h"

namespace lmkit::training {

class RunView {
 public:
  explicit RunView(std::string dir, LanguageModel trained = LanguageModel{nullptr});

  const std::string& dir() const { return dir_; }
  // summary.json; UsageError while the run has not ended.
  nlohmann::json summary() const;
  // The records of metrics.jsonl in order; type "step" or "epoch" keeps one kind.
  nlohmann::json metrics(const std::optional<std::string>& type) const;
  nlohmann::json config() const;
  // The trained model, else best.ckpt — refused when it holds another model than config.json
  // describes (a best.ckpt copied from another run would evaluate under this run's name).
  LanguageModel best_model() const;
  // "Run DIR: finished, test ppl 61.2"; never throws (the REPL echoes with it).
  std::string describe() const;

 private:
  std::string dir_;
  LanguageModel trained_;
};

// A run directory (one with a config.json); UsageError naming it otherwise.
std::shared_ptr<RunView> open_run(const std::string& dir);

}  // namespace lmkit::training
