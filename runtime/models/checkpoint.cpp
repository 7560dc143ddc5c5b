#include "runtime/models/checkpoint.h"

#include <c10/util/Exception.h>

#include <cstdint>
#include <cstring>
#include <filesystem>
#include <regex>
#include <sstream>

#include "runtime/config/json_text.h"
#include "runtime/core/atomic_file.h"
#include "runtime/core/error.h"
#include "runtime/core/number_text.h"
#include "runtime/core/version.h"
#include "runtime/models/run_id.h"
#include "runtime/tensor_files/tensor_file.h"

namespace lmkit {
namespace {

constexpr char kMagic[8] = {'L', 'M', 'K', 'I', 'T', 'C', 'K', 'P'};
constexpr std::uint32_t kFormat = 1;

std::uint64_t fnv1a(const std::string& bytes, std::size_t n) {
  std::uint64_t hash = 1469598103934665603ULL;
  for (std::size_t i = 0; i < n; ++i) {
    hash ^= static_cast<unsigned char>(bytes[i]);
    hash *= 1099511628211ULL;
  }
  return hash;
}

template <typename T>
void put(std::string& out, T value) {
  char buf[sizeof(T)];
  std::memcpy(buf, &value, sizeof(T));  // little-endian hosts only (x86-64, aarch64)
  out.append(buf, sizeof(T));
}

template <typename T>
T take(const std::string& in, std::size_t& at, const std::string& path) {
  if (at + sizeof(T) > in.size()) throw EnvironmentError("checkpoint '" + path + "' is truncated");
  T value;
  std::memcpy(&value, in.data() + at, sizeof(T));
  at += sizeof(T);
  return value;
}

}  // namespace

std::string encode_container(const nlohmann::json& header, const std::string& archive) {
  const std::string json = config::dump_json(header);
  std::string out(kMagic, sizeof(kMagic));
  put<std::uint32_t>(out, kFormat);
  put<std::uint64_t>(out, json.size());
  out += json;
  put<std::uint64_t>(out, archive.size());
  out += archive;
  put<std::uint64_t>(out, fnv1a(out, out.size()));
  return out;
}

Container decode_container(const std::string& in, const std::string& path) {
  if (in.size() < sizeof(kMagic) || std::memcmp(in.data(), kMagic, sizeof(kMagic)) != 0) {
    throw EnvironmentError("'" + path + "' is not an lmkit checkpoint (no LMKITCKP header)");
  }
  std::size_t at = sizeof(kMagic);
  const auto format = take<std::uint32_t>(in, at, path);
  if (format != kFormat) {
    throw EnvironmentError("checkpoint '" + path + "' has format " + integer_text(format) +
                           "; this lmkit reads format " + integer_text(kFormat));
  }
  const auto json_size = take<std::uint64_t>(in, at, path);
  if (json_size > in.size() - at) throw EnvironmentError("checkpoint '" + path + "' is truncated");
  const std::string json = in.substr(at, json_size);
  at += json_size;
  const auto archive_size = take<std::uint64_t>(in, at, path);
  if (archive_size > in.size() - at) throw EnvironmentError("checkpoint '" + path + "' is truncated");
  const std::size_t archive_at = at;
  at += archive_size;
  const auto stored = take<std::uint64_t>(in, at, path);
  if (at != in.size()) throw EnvironmentError("checkpoint '" + path + "' has trailing bytes (corrupted)");
  if (stored != fnv1a(in, archive_at + archive_size)) {
    throw EnvironmentError("checkpoint '" + path + "' is corrupted (checksum mismatch)");
  }
  Container result;
  try {
    result.header = config::parse_json_text(json);
  } catch (const config::JsonTextError& e) {
    throw EnvironmentError("checkpoint '" + path + "' has an unreadable header: " + e.what());
  }
  result.archive = in.substr(archive_at, archive_size);
  return result;
}

nlohmann::json checkpoint_header(const LanguageModel& model) {
  return {{"lmkit", build_info().lmkit_version}, {"config", to_json(model->options)}};
}

void save_checkpoint(const LanguageModel& model, const std::string& path, const std::string& run_id) {
  auto header = checkpoint_header(model);
  if (!run_id.empty()) header["run_id"] = run_id;
  std::ostringstream archive_bytes;
  {
    torch::serialize::OutputArchive archive;
    model->save(archive);
    archive.save_to(archive_bytes);
  }
  write_file_atomically(path, encode_container(header, archive_bytes.str()));
}

namespace {

LanguageModel model_from_header(const nlohmann::json& header, const std::string& path) {
  try {
    return LanguageModel(language_model_options_from_json(header.at("config")));
  } catch (const nlohmann::json::exception& e) {
    throw EnvironmentError("checkpoint '" + path + "' has an unreadable header: " + e.what());
  } catch (const ConfigError& e) {
    // A head written in Lua is code: the file holds its parameters, the script holds the head.
    const auto head = header.at("config").value("head", nlohmann::json::object());
    const auto kind = head.is_object() ? head.value("kind", std::string()) : std::string();
    if (kind == "custom" || kind == "pointwise") {
      throw UsageError("checkpoint '" + path + "' has a head written in Lua (" + kind +
                       (head.contains("name") && head.at("name").is_string() ? " '" + head.at("name").get<std::string>() + "'" : std::string()) +
                       "), which no file holds: load it with that head given again, lmkit.load(path, {head = myhead}) "
                       "(docs/lua-heads.md)");
    }
    throw EnvironmentError("checkpoint '" + path + "': " + e.what());
  }
}

std::string shape_text(const torch::Tensor& t) {
  std::string text = "[";
  for (int64_t i = 0; i < t.dim(); ++i) text += (i ? ", " : "") + integer_text(t.size(i));
  return text + "]";
}

// Module::load's traversal (own parameters, own buffers, then each child's), reading from the
// archive's tensors by name so that shapes are compared before anything is overwritten.
void load_module(torch::nn::Module& module, const NamedTensors& tensors, const std::string& stored_prefix,
                 const std::string& prefix, const std::string& source) {
  auto load_tensor = [&](const std::string& key, torch::Tensor& target, bool is_buffer) {
    const std::string name = prefix + key;
    const auto stored = tensors.find(stored_prefix + name);
    if (stored == tensors.end()) {
      throw EnvironmentError(source + " has no " + (is_buffer ? "buffer" : "parameter") + " '" + name +
                             "': it was saved from a model of another structure");
    }
    if (stored->second.sizes() != target.sizes()) {
      throw EnvironmentError(source + ": parameter '" + name + "' is " + shape_text(stored->second) + " there but " +
                             shape_text(target) + " in this model (a model of another shape wrote it; build the "
                             "model with the checkpoint's config, e.g. lmkit.load(path))");
    }
    torch::NoGradGuard no_grad;
    target.copy_(stored->second);
  };
  for (auto& item : module.named_parameters(/*recurse=*/false)) load_tensor(item.key(), item.value(), false);
  for (auto& item : module.named_buffers(/*recurse=*/false)) load_tensor(item.key(), item.value(), true);
  for (const auto& child : module.named_children()) {
    load_module(*child.value(), tensors, stored_prefix, prefix + child.key() + ".", source);
  }
}

void load_archive(LanguageModel& model, const std::string& bytes, const std::string& path) {
  const std::string source = "checkpoint '" + path + "'";
  load_model_tensors(model, read_weights_archive(bytes, source), "", source);
}

// The part of a container that the JSON library's (or Torch's) message points at.
std::string damaged_part(const std::string& message) {
  std::smatch m;
  static const std::regex missing_key(R"(\[json\.exception\.[a-z_]+\.\d+\] key '([^']*)' not found)");
  if (std::regex_search(message, m, missing_key)) return "its header has no entry '" + m[1].str() + "'";
  if (message.find("[json.exception.") != std::string::npos) return "an entry of its header has the wrong type";
  return "a stored tensor does not fit the place it is restored to";
}

}  // namespace

NamedTensors read_weights_archive(const std::string& archive, const std::string& source) {
  return read_tensor_archive(ByteSpan("the weights archive inside " + source, archive, "an archive"),
                             "the weights archive inside " + source);
}

void throw_damaged_container(const std::string& source, std::exception_ptr error) {
  std::string message;
  try {
    std::rethrow_exception(error);
  } catch (const c10::Error& e) {
    message = e.what_without_backtrace();
  } catch (const std::exception& e) {
    message = e.what();
  } catch (...) {
  }
  // Memory running out while restoring is no damage of the file: Torch's own report stands.
  if (message.find("out of memory") != std::string::npos) std::rethrow_exception(error);
  throw EnvironmentError(source + " is damaged inside: " + damaged_part(message) +
                         ". Its checksum matches, so it was written this way (by another program, or edited), not "
                         "damaged on disk; use another checkpoint of the run (best.ckpt, state.ckpt) or train again");
}

void load_model_tensors(LanguageModel& model, const NamedTensors& tensors, const std::string& stored_prefix,
                        const std::string& source) {
  load_module(*model, tensors, stored_prefix, "", source);
}

namespace {

// A run's resume state has the container of a checkpoint and more: its model's weights sit under
// "model." beside the optimizer's, and it is not what lmkit.load means.
void refuse_resume_state(const nlohmann::json& header, const std::string& path) {
  if (!header.is_object() || !header.contains("state")) return;
  const auto folder = std::filesystem::path(path).parent_path().string();
  throw EnvironmentError("'" + path + "' is a run's resume state (state.ckpt), not a model checkpoint: lmkit.resume(\"" +
                         (folder.empty() ? "." : folder) + "\") continues the run, and the run's best.ckpt (or last.ckpt) "
                         "holds its model");
}

}  // namespace

Checkpoint load_checkpoint(const std::string& path) {
  const auto container = decode_container(read_file(path, "checkpoint"), path);
  refuse_resume_state(container.header, path);
  Checkpoint result;
  result.header = container.header;
  result.model = model_from_header(container.header, path);
  load_archive(result.model, container.archive, path);
  return result;
}

nlohmann::json load_weights(LanguageModel& model, const std::string& path, const std::string& expected_run_id) {
  const auto container = decode_container(read_file(path, "checkpoint"), path);
  refuse_resume_state(container.header, path);
  const auto stored_id = run_id_in(container.header);
  if (!expected_run_id.empty() && !stored_id.empty() && stored_id != expected_run_id) {
    throw UsageError("checkpoint '" + path + "' was written by another run (run id " + stored_id +
                     ") than this one (run id " + expected_run_id + "): it was copied in from elsewhere");
  }
  load_archive(model, container.archive, path);
  return container.header;
}

}  // namespace lmkit
