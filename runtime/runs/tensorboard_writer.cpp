#include "runtime/runs/tensorboard_writer.h"

#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <fstream>

#include "runtime/core/crc32c.h"
#include "runtime/core/error.h"
#include "runtime/core/number_text.h"

#ifdef LMKIT_WITH_TENSORBOARD
#include "tensorboard_event.pb.h"
#endif

namespace lmkit::training {
namespace {

double wall_time() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

std::string host_name() {
  char name[256] = {};
  if (gethostname(name, sizeof(name) - 1) != 0 || name[0] == '\0') return "localhost";
  return name;
}

void put_le(std::string& out, std::uint64_t value, int bytes) {
  for (int i = 0; i < bytes; ++i) out.push_back(static_cast<char>((value >> (8 * i)) & 0xFFu));
}

// A TFRecord frame: length, its masked CRC-32C, the payload, its masked CRC-32C (little-endian).
std::string framed(const std::string& payload) {
  std::string out;
  put_le(out, payload.size(), 8);
  put_le(out, masked_crc32c(out.data(), 8), 4);
  out += payload;
  put_le(out, masked_crc32c(payload.data(), payload.size()), 4);
  return out;
}

}  // namespace

bool tensorboard_available() {
#ifdef LMKIT_WITH_TENSORBOARD
  return true;
#else
  return false;
#endif
}

bool tensorboard_requested(std::optional<bool> option) {
  bool requested = false;
  if (option) {
    requested = *option;
  } else if (const char* value = std::getenv("LMKIT_TENSORBOARD")) {
    const std::string text = value;
    if (text != "1" && text != "0" && !text.empty()) {
      throw UsageError("LMKIT_TENSORBOARD='" + text + "': set it to 1 (TensorBoard event files in every run directory) " +
                       "or 0, or unset it");
    }
    requested = text == "1";
  }
  if (requested && !tensorboard_available()) {
    throw UsageError("TensorBoard event files were asked for (log_tensorboard or LMKIT_TENSORBOARD=1), but this lmkit " +
                     std::string("was built without them: install libprotobuf-dev and protobuf-compiler (scripts/setup.sh ") +
                     "does) and rebuild, or train without log_tensorboard");
  }
  return requested;
}

struct TensorBoardWriter::Impl {
  std::filesystem::path file;
  std::ofstream out;

  void write(const std::string& payload) {
    const auto frame = framed(payload);
    out.write(frame.data(), static_cast<std::streamsize>(frame.size()));
    out.flush();  // TensorBoard follows the file as it grows
    if (!out) throw EnvironmentError("cannot write the TensorBoard event file '" + file.string() + "': " + std::strerror(errno));
  }
};

TensorBoardWriter::TensorBoardWriter(const std::filesystem::path& dir) : impl_(std::make_unique<Impl>()) {
#ifndef LMKIT_WITH_TENSORBOARD
  (void)dir;
  tensorboard_requested(true);  // throws the message that says what to install
#else
  const auto seconds = static_cast<std::int64_t>(wall_time());
  impl_->file = dir / ("events.out.tfevents." + integer_text(seconds) + "." + host_name() + "." + integer_text(getpid()));
  impl_->out.open(impl_->file, std::ios::binary | std::ios::app);
  if (!impl_->out) {
    throw EnvironmentError("cannot create the TensorBoard event file '" + impl_->file.string() + "': " + std::strerror(errno));
  }
  tensorboard::Event event;
  event.set_wall_time(wall_time());
  event.set_file_version("brain.Event:2");
  impl_->write(event.SerializeAsString());
#endif
}

TensorBoardWriter::~TensorBoardWriter() = default;

const std::filesystem::path& TensorBoardWriter::file() const { return impl_->file; }

void TensorBoardWriter::write_scalars(std::int64_t step, const std::vector<std::pair<std::string, double>>& scalars) {
#ifdef LMKIT_WITH_TENSORBOARD
  tensorboard::Event event;
  event.set_wall_time(wall_time());
  event.set_step(step);
  auto* summary = event.mutable_summary();
  for (const auto& [tag, value] : scalars) {
    auto* v = summary->add_value();
    v->set_tag(tag);
    v->set_simple_value(static_cast<float>(value));
  }
  impl_->write(event.SerializeAsString());
#else
  (void)step;
  (void)scalars;
#endif
}

void TensorBoardWriter::write_hparams(const std::vector<std::pair<std::string, nlohmann::json>>& settings,
                                      const std::string& group) {
#ifdef LMKIT_WITH_TENSORBOARD
  tensorboard::HParamsPluginData data;
  data.set_version(0);
  auto* start = data.mutable_session_start_info();
  start->set_group_name(group);
  start->set_start_time_secs(wall_time());
  for (const auto& [name, value] : settings) {
    tensorboard::HParamValue v;
    if (value.is_boolean()) {
      v.set_bool_value(value.get<bool>());
    } else if (value.is_number()) {
      v.set_number_value(value.get<double>());
    } else if (value.is_string()) {
      v.set_string_value(value.get<std::string>());
    } else {
      continue;  // arrays and nulls: no hyperparameter the tab can show
    }
    (*start->mutable_hparams())[name] = v;
  }
  tensorboard::Event event;
  event.set_wall_time(wall_time());
  event.set_step(0);
  auto* value = event.mutable_summary()->add_value();
  value->set_tag("_hparams_/session_start_info");
  auto* tensor = value->mutable_tensor();  // an empty float tensor, TensorBoard's NULL_TENSOR
  tensor->set_dtype(1);
  tensor->mutable_tensor_shape()->add_dim()->set_size(0);
  auto* plugin = value->mutable_metadata()->mutable_plugin_data();
  plugin->set_plugin_name("hparams");
  plugin->set_content(data.SerializeAsString());
  impl_->write(event.SerializeAsString());
#else
  (void)settings;
  (void)group;
#endif
}

void TensorBoardWriter::write_metrics(const nlohmann::json& record) {
  if (!record.is_object()) return;
  const auto type = record.value("type", std::string());
  const auto step = record.find("step");
  if ((type != "step" && type != "epoch") || step == record.end() || !step->is_number_integer()) return;
  const auto stage = record.value("stage", std::string("train"));
  const std::string prefix = type == "step" ? stage : stage + "_epoch";
  std::vector<std::pair<std::string, double>> scalars;
  for (auto it = record.begin(); it != record.end(); ++it) {
    const auto& key = it.key();
    // The record's coordinates and clock are no curves; booleans (best, switched) neither.
    if (key == "step" || key == "epoch" || key == "batch" || key == "seconds" || !it->is_number()) continue;
    scalars.emplace_back(prefix + "/" + key, it->get<double>());
  }
  if (!scalars.empty()) write_scalars(step->get<std::int64_t>(), scalars);
}

}  // namespace lmkit::training
