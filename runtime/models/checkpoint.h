// Checkpoint files: one file holding a model's weights, its full config (JSON) and the lmkit
// version that wrote it, with a checksum.
//
// Layout: "LMKITCKP" magic, u32 format version, u64 JSON length, JSON header, u64 archive length,
// Torch archive (the module's parameters and buffers), u64 FNV-1a checksum of all preceding bytes.
// Written to a temporary file beside the target and renamed over it, so a crash never leaves a
// half-written checkpoint under the real name. Loading checks magic, lengths and checksum and
// names the file in every error (EnvironmentError).
#pragma once
#include <string>

#include <nlohmann/json.hpp>

#include "runtime/models/language_model.h"

namespace lmkit {

void save_checkpoint(const LanguageModel& model, const std::string& path);

struct Checkpoint {
  nlohmann::json header;  // {"lmkit": version, "config": {...}}
  LanguageModel model{nullptr};
};

// Rebuilds the model from the stored config and loads the weights.
Checkpoint load_checkpoint(const std::string& path);

// The container under both checkpoints and training states (runtime/training/train_state.h):
// a JSON header and a Torch archive's bytes, framed and checksummed as described above.
struct Container {
  nlohmann::json header;
  std::string archive;
};
std::string encode_container(const nlohmann::json& header, const std::string& archive);
// Checks magic, format, lengths and checksum; errors name `path`.
Container decode_container(const std::string& bytes, const std::string& path);
// {"lmkit": version, "config": the model's full config}.
nlohmann::json checkpoint_header(const LanguageModel& model);

// Loads a checkpoint's weights into an existing model of the same structure (also one whose head
// is written in Lua, which a config alone cannot rebuild), onto the model's device; returns the
// header. Errors as load_checkpoint.
nlohmann::json load_weights(LanguageModel& model, const std::string& path);

// Copies the parameters and buffers of a Torch archive (as Module::save wrote it) into `model`,
// checking that every one is present with the model's shape. Torch's own Module::load replaces a
// parameter of another shape without a word, and the mismatch surfaced later as "mat1 and mat2
// shapes cannot be multiplied". Errors (EnvironmentError) name `source`, the parameter and both
// shapes.
void load_model_archive(LanguageModel& model, torch::serialize::InputArchive& archive, const std::string& source);

}  // namespace lmkit
