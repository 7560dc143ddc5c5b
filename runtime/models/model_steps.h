// A language model step by step, as a script drives it (lmkit.Model's methods): token ids [T, B] in,
// the hidden state carried between calls by the caller — nil starts from zeros, and the state
// returned is detached, so that batches carry it without backpropagating into earlier ones. The
// AR/TAR terms of the last loss are kept on the model for the script to add.
#pragma once
#include <optional>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "runtime/config/declared_result.h"
#include "runtime/models/language_model.h"

namespace lmkit {

// A step's tensor and the state after it (detached).
struct Step {
  torch::Tensor tensor;
  EncoderState hidden;
};
inline auto declared_result(config::Tag<Step>) {
  return config::result_values(config::result_field("tensor", &Step::tensor, "the step's result"),
                               config::result_field("hidden", &Step::hidden, "the state after it (the AWD-LSTM's {{h, c}, ...} per layer)"));
}
struct TopKStep {
  torch::Tensor log_probs, ids;
  EncoderState hidden;
};
inline auto declared_result(config::Tag<TopKStep>) {
  return config::result_values(config::result_field("log_probs", &TopKStep::log_probs, "[T·B, k]"),
                               config::result_field("ids", &TopKStep::ids, "[T·B, k], 0-based"),
                               config::result_field("hidden", &TopKStep::hidden, "the state after it"));
}
struct LoadedModel {
  LanguageModel model{nullptr};
  std::string version;
};
inline auto declared_result(config::Tag<LoadedModel>) {
  return config::result_values(config::result_field("model", &LoadedModel::model, "the model"),
                               config::result_field("version", &LoadedModel::version, "the lmkit version that wrote it"));
}

// Encoder output [T, B, nhidlast] (after the output dropout) and the next state.
Step forward_step(LanguageModel& model, const torch::Tensor& ids,
                                                 const std::optional<EncoderState>& hidden);
// Next-token log-probabilities [T·B, N] (row t·B + b is position t of sequence b).
Step log_probs_step(LanguageModel& model, const torch::Tensor& ids,
                                                   const std::optional<EncoderState>& hidden);
// Mean NLL of targets ([T, B] or [T·B]) with autograd; the AR/TAR terms go to last_ar/last_tar.
Step loss_step(LanguageModel& model, const torch::Tensor& ids, const torch::Tensor& targets,
                                              const std::optional<EncoderState>& hidden);
torch::Tensor last_ar(const LanguageModel& model);
torch::Tensor last_tar(const LanguageModel& model);
// The k most likely next tokens per position: log-probabilities and ids [T·B, k], and the next state.
TopKStep top_k_step(LanguageModel& model, const torch::Tensor& ids,
                                                               std::int64_t k, const std::optional<EncoderState>& hidden);
EncoderState zero_state(const LanguageModel& model, std::int64_t batch_size);

std::vector<torch::Tensor> trainable_parameters(const LanguageModel& model);
std::vector<torch::Tensor> own_lr_parameters(LanguageModel& model);

LanguageModelImpl& training_mode(LanguageModelImpl& model);
LanguageModelImpl& evaluation_mode(LanguageModelImpl& model);
bool is_training(const LanguageModelImpl& model);
LanguageModelImpl& move_to_device(LanguageModelImpl& model, const std::string& device);
LanguageModelImpl& to_float64(LanguageModelImpl& model);

// The full configuration as JSON text (what a checkpoint stores).
std::string model_config_text(const LanguageModel& model);
// "Model(mos, 24,143,210 parameters): {...}".
std::string describe_model(const LanguageModelImpl& model);
// save_checkpoint, refused for a head written in Lua (its code is not data).
void save_model(const LanguageModel& model, const std::string& path);
// The model in a checkpoint and the lmkit version that wrote it.
LoadedModel load_model(const std::string& path);

// A checkpoint whose head was written in Lua (code, which no file holds), loaded with the head given
// again: lmkit.load(path, {head = spec}). checkpoint_options_for_head: the stored model options, the
// head left to the caller (Softmax until it sets one). load_into: the checkpoint's weights into
// `model` (built from those options and the given head); every parameter is checked against the
// file by name and shape, and a head parameter the file holds but the given head lacks is refused.
LanguageModelOptions checkpoint_options_for_head(const std::string& path);
LoadedModel load_into(LanguageModel model, const std::string& path);

}  // namespace lmkit
