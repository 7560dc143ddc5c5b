// What a stopped or preempted run is resumed with: its model and corpus rebuilt from config.json
// (unless the caller gives them: a head written in Lua cannot be rebuilt), and its stored training
// options with the caller's resumable changes (epochs, max_seconds, ...) on top. The Trainer then
// restores state.ckpt and goes on step for step.
#pragma once
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "runtime/data/corpus.h"
#include "runtime/models/language_model.h"
#include "runtime/training/train_options.h"

namespace lmkit::training {

struct ResumeRequest {
  std::optional<LanguageModel> model;    // the run's model, when the caller has it
  std::optional<data::Corpus> corpus;    // the run's corpus, when the caller has it
  std::string device;                    // move a rebuilt model there ("" keeps the CPU)
  nlohmann::json option_changes = nlohmann::json::object();  // over the stored training options
};

struct ResumedRun {
  LanguageModel model;
  data::Corpus corpus;
  TrainOptions options;
};

// UsageError when dir holds nothing to resume (no state.ckpt) or a head written in Lua that the
// request does not give; the Trainer checks that the configuration is the stored one.
ResumedRun prepare_resume(const std::string& dir, ResumeRequest request);

}  // namespace lmkit::training
