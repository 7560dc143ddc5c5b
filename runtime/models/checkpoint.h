// Checkpoint files: one file holding a model's weights, its full config (JSON) and the lmkit
// version that wrote it, with a checksum.
//
// Layout: "LMKITCKP" magic, u32 format version, u64 JSON length, JSON header, u64 archive length,
// Torch archive (the module's parameters and buffers), u64 FNV-1a checksum of all preceding bytes.
// Written to a temporary file beside the target and renamed over it, so a crash never leaves a
// half-written checkpoint under the real name. Loading checks magic, lengths and checksum and
// names the file in every error (EnvironmentError).
#pragma once
#include <exception>
#include <map>
#include <string>
#include <utility>

#include <nlohmann/json.hpp>

#include "runtime/core/error.h"
#include "runtime/models/language_model.h"

namespace lmkit {

// run_id: the training run that wrote it (runtime/training/trainer.cpp), stored in the header so
// that a checkpoint copied in from another run is told apart; empty for a model saved by hand.
void save_checkpoint(const LanguageModel& model, const std::string& path, const std::string& run_id = {});

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
// header. Errors as load_checkpoint. With expected_run_id, a checkpoint written by another run
// (its header's run_id differs) is refused (UsageError naming both ids) before any weight changes.
nlohmann::json load_weights(LanguageModel& model, const std::string& path, const std::string& expected_run_id = {});

// The tensors of a container's weights archive by name (runtime/tensor_files/tensor_file.h's
// read_tensor_archive: lmkit's own zip and pickle readers, every record checked, nothing of
// Torch's reader, which crashes on a damaged pickle). Errors name `source` ("checkpoint '<path>'").
using NamedTensors = std::map<std::string, torch::Tensor>;
NamedTensors read_weights_archive(const std::string& archive, const std::string& source);

// Copies the parameters and buffers named "<stored_prefix><name>" in `tensors` into `model`,
// checking that every one is present with the model's shape (Torch's own Module::load replaced a
// parameter of another shape without a word; the mismatch surfaced later as "mat1 and mat2 shapes
// cannot be multiplied"). Errors (EnvironmentError) name `source`, the parameter and both shapes.
void load_model_tensors(LanguageModel& model, const NamedTensors& tensors, const std::string& stored_prefix,
                        const std::string& source);

// What a failure in restoring from `source` — of the header's JSON, or of Torch given a stored
// tensor — means, in lmkit's words: EnvironmentError "<source> is damaged inside: <which part>
// ...; use another checkpoint".
[[noreturn]] void throw_damaged_container(const std::string& source, std::exception_ptr error);

// Runs `read` — restoring lmkit's objects from a container's header and tensors — and turns any
// error that is not lmkit's own (the JSON library's, Torch's, the standard library's range checks)
// into throw_damaged_container's message. A container's checksum only says its bytes are
// the ones written: a file written damaged (by another program, or edited) passes it.
template <typename Read>
decltype(auto) reading_container(const std::string& source, Read&& read) {
  try {
    return std::forward<Read>(read)();
  } catch (const EnvironmentError&) {
    throw;
  } catch (const ConfigError&) {
    throw;
  } catch (const UsageError&) {
    throw;
  } catch (const std::bad_alloc&) {
    throw;
  } catch (...) {
    throw_damaged_container(source, std::current_exception());
  }
}

}  // namespace lmkit
