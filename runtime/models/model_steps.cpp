#include "runtime/models/model_steps.h"

#include "runtime/core/atomic_file.h"
#include "runtime/core/device.h"
#include "runtime/core/error.h"
#include "runtime/core/number_text.h"
#include "runtime/models/checkpoint.h"
#include "runtime/tensor/tensor_format.h"

namespace lmkit {
namespace {

void check_ids(const torch::Tensor& ids) {
  if (ids.dim() != 2 || ids.scalar_type() != torch::kInt64) {
    throw UsageError("token ids must be an int64 Tensor [T, B], got " + dtype_name(ids.scalar_type()) + " of " +
                     integer_text(ids.dim()) + " dimensions");
  }
}

EncoderState state_or_zeros(const LanguageModel& model, const torch::Tensor& ids, const std::optional<EncoderState>& hidden) {
  check_ids(ids);
  return hidden ? *hidden : model->init_hidden(ids.size(1));
}

EncoderState detached(const EncoderState& state) { return detach_state(state); }

}  // namespace

Step forward_step(LanguageModel& model, const torch::Tensor& ids,
                                                 const std::optional<EncoderState>& hidden) {
  auto out = model->encode(ids, state_or_zeros(model, ids, hidden));
  return {out.output, detached(out.state)};
}

Step log_probs_step(LanguageModel& model, const torch::Tensor& ids,
                                                   const std::optional<EncoderState>& hidden) {
  auto [logp, next] = model->log_probs(ids, state_or_zeros(model, ids, hidden));
  return {logp, detached(next)};
}

Step loss_step(LanguageModel& model, const torch::Tensor& ids, const torch::Tensor& targets,
                                              const std::optional<EncoderState>& hidden) {
  auto out = model->loss(ids, targets, state_or_zeros(model, ids, hidden));
  model->last_ar = out.ar;
  model->last_tar = out.tar;
  return {out.loss, detached(out.hidden)};
}

torch::Tensor last_ar(const LanguageModel& model) {
  if (!model->last_ar.defined()) throw UsageError("no AR term yet: call model:loss first");
  return model->last_ar;
}

torch::Tensor last_tar(const LanguageModel& model) {
  if (!model->last_tar.defined()) throw UsageError("no TAR term yet: call model:loss first");
  return model->last_tar;
}

TopKStep top_k_step(LanguageModel& model, const torch::Tensor& ids,
                                                               std::int64_t k, const std::optional<EncoderState>& hidden) {
  const auto vocab = model->vocab_size();
  if (k < 1 || k > vocab) throw UsageError("k must be in [1, " + integer_text(vocab) + "], got " + integer_text(k));
  torch::NoGradGuard no_grad;
  auto out = model->encode(ids, state_or_zeros(model, ids, hidden));
  auto [values, indices] = model->head->top_k(out.output, model->decoder(), k);
  return {values, indices, detached(out.state)};
}

EncoderState zero_state(const LanguageModel& model, std::int64_t batch_size) {
  if (batch_size < 1) throw UsageError("batch size must be positive, got " + integer_text(batch_size));
  return model->init_hidden(batch_size);
}

std::vector<torch::Tensor> trainable_parameters(const LanguageModel& model) {
  std::vector<torch::Tensor> trainable;
  for (const auto& p : model->parameters()) {
    if (p.requires_grad()) trainable.push_back(p);
  }
  return trainable;
}

std::vector<torch::Tensor> own_lr_parameters(LanguageModel& model) { return model->head->own_lr_parameters(); }

LanguageModelImpl& training_mode(LanguageModelImpl& model) {
  model.train(true);
  return model;
}

LanguageModelImpl& evaluation_mode(LanguageModelImpl& model) {
  model.train(false);
  return model;
}

bool is_training(const LanguageModelImpl& model) { return model.is_training(); }

LanguageModelImpl& move_to_device(LanguageModelImpl& model, const std::string& device) {
  model.to(parse_device(device));
  return model;
}

LanguageModelImpl& to_float64(LanguageModelImpl& model) {
  model.to(torch::kFloat64);
  return model;
}

std::string model_config_text(const LanguageModel& model) { return to_json(model->options).dump(); }

std::string describe_model(const LanguageModelImpl& model) {
  return "Model(" + model.head->kind() + ", " + integer_text(model.parameter_count().at("total")) + " parameters, " +
         (model.is_training() ? "training" : "evaluation") + " mode): " + to_json(model.options).dump();
}

void save_model(const LanguageModel& model, const std::string& path) {
  const auto kind = model->head->kind();
  if (kind == "pointwise" || kind == "custom") {
    throw UsageError("a model with a head written in Lua (" + kind + ") cannot be saved: its code is not data");
  }
  save_checkpoint(model, path);
}

LanguageModelOptions checkpoint_options_for_head(const std::string& path) {
  const auto container = decode_container(read_file(path, "checkpoint"), path);
  try {
    auto config = container.header.at("config");
    config["head"] = nlohmann::json{{"kind", "softmax"}};
    return language_model_options_from_json(config);
  } catch (const nlohmann::json::exception& e) {
    throw EnvironmentError("checkpoint '" + path + "' has an unreadable header: " + e.what());
  } catch (const ConfigError& e) {
    throw EnvironmentError("checkpoint '" + path + "': " + e.what());
  }
}

LoadedModel load_into(LanguageModel model, const std::string& path) {
  const auto container = decode_container(read_file(path, "checkpoint"), path);
  const std::string source = "checkpoint '" + path + "'";
  const auto tensors = read_weights_archive(container.archive, source);
  std::string extra;
  const auto own = model->named_parameters(/*recurse=*/true);
  for (const auto& [name, tensor] : tensors) {
    if (name.rfind("head.", 0) == 0 && own.find(name) == nullptr) extra += (extra.empty() ? "" : ", ") + name;
  }
  if (!extra.empty()) {
    throw UsageError(source + " holds head parameters the given head does not have (" + extra +
                     "): give the head it was trained with (the same parameters, in the same order)");
  }
  load_model_tensors(model, tensors, "", source);
  model->eval();  // ready to evaluate, as import_checkpoint's (lmkit.train sets training mode itself)
  return {model, container.header.value("lmkit", std::string("?"))};
}

LoadedModel load_model(const std::string& path) {
  auto checkpoint = load_checkpoint(path);
  // Ready to evaluate, as import_checkpoint's: in training mode two log_probs of the same ids
  // differed by their dropout masks. lmkit.train sets training mode itself.
  checkpoint.model->eval();
  return {checkpoint.model, checkpoint.header.value("lmkit", std::string("?"))};
}

}  // namespace lmkit
