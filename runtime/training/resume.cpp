#include "runtime/training/resume.h"

#include "runtime/core/device.h"
#include "runtime/core/error.h"
#include "runtime/data/corpus_origin.h"
#include "runtime/runs/run_store.h"

namespace lmkit::training {

ResumedRun prepare_resume(const std::string& dir, ResumeRequest request) {
  RunStore store(dir);
  if (!store.exists("state.ckpt")) {
    throw UsageError("nothing to resume in '" + dir + "': it has no state.ckpt (no epoch finished and no preemption "
                     "was saved there); start the run again with lmkit.train");
  }
  const auto config = store.read_json("config.json");
  LanguageModel model{nullptr};
  if (request.model) {
    model = *request.model;
  } else {
    const auto head_kind = config.at("model").at("head").value("kind", std::string());
    if (head_kind == "pointwise" || head_kind == "custom") {
      throw UsageError("run '" + dir + "' trained a head written in Lua (" + head_kind +
                       "); pass the same model: lmkit.resume(dir, {model = ...})");
    }
    model = LanguageModel(language_model_options_from_json(config.at("model")));
    if (!request.device.empty()) model->to(parse_device(request.device));
  }
  data::Corpus corpus = request.corpus ? std::move(*request.corpus) : data::corpus_from_origin(config.at("corpus").at("origin"));
  nlohmann::json options = config.at("train");
  for (const auto& item : request.option_changes.items()) options[item.key()] = item.value();
  return {model, std::move(corpus), train_options_from_json(options)};
}

}  // namespace lmkit::training
