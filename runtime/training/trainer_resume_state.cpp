// The resume state of a run: saved at step boundaries, loaded to go on step for step; freezing.
#include "runtime/training/trainer_state.h"

namespace lmkit::training {
namespace {

// The archive name of tensor t of part l of chunk c's encoder state: "hidden/c/l/h" and ".../c" for
// the first two (an LSTM layer's h and c, the names of earlier resume files), ".../t" beyond.
std::string hidden_entry(std::size_t c, std::size_t l, std::size_t t) {
  return t == 0 ? fmt::format("hidden/{}/{}/h", c, l) : t == 1 ? fmt::format("hidden/{}/{}/c", c, l) : fmt::format("hidden/{}/{}/{}", c, l, t);
}

}  // namespace

ResumableFields Trainer::State::resumable_fields(bool in_loop) {
  ResumableFields f;
  RunPosition::declare(f);
  AveragingState::declare(f);
  BestModel::declare(f);
  FinetuneProgress::declare(f);
  LossTotals::declare(f);
  RunClocks::declare(f);
  f.add("switch_history", [this] { return json(policy->history()); },
        [this](const json& j) { policy->set_history(j.get<std::vector<double>>()); });
  f.add("sampler", [this] { return json(sampler->state()); },
        [this](const json& j) { sampler->set_state(j.get<std::string>()); });
  f.add("host_state", [this] { return host_state; }, [this](const json& j) { host_state = j; });
  // A state saved at the top of a training iteration was captured there: the resumed run must not
  // capture again before its first window.
  f.add("host_state_in_loop", [in_loop] { return json(in_loop); },
        [this](const json& j) { skip_capture_once = j.get<bool>(); });
  f.add("frozen", [this] { return json(std::vector<std::string>(frozen.begin(), frozen.end())); },
        [this](const json& j) {
          for (const auto& name : j) apply_frozen(name.get<std::string>(), true);
        });
  // The metrics continue from the state: records written after it (by the session that was
  // stopped) are dropped, so the file matches an uninterrupted run.
  f.add("metrics", [this] { return json(store.metrics().size()); },
        [this](const json& j) { store.truncate_metrics(j.get<std::size_t>()); });
  return f;
}

void Trainer::State::save_state(bool in_loop) {
  json header = checkpoint_header(model);
  header["run_id"] = config.value("run_id", json());
  header["state"] = resumable_fields(in_loop).save();
  // The optimizer's JSON and the archive's tensors (model, optimizer, hidden state, generators).
  header["state"]["optimizer"] = optimizer->state_json();

  torch::serialize::OutputArchive archive;
  torch::serialize::OutputArchive model_archive;
  model->save(model_archive);
  archive.write("model", model_archive);
  json tensor_keys = json::array();
  for (const auto& [key, tensor] : optimizer->state_tensors()) {
    archive.write("optimizer/" + key, tensor);
    tensor_keys.push_back(key);
  }
  header["state"]["optimizer_tensors"] = tensor_keys;
  for (std::size_t c = 0; c < hidden.size(); ++c) {
    for (std::size_t l = 0; l < hidden[c].size(); ++l) {
      for (std::size_t t = 0; t < hidden[c][l].size(); ++t) archive.write(hidden_entry(c, l, t), hidden[c][l][t].detach());
    }
  }
  {
    auto generator = at::detail::getDefaultCPUGenerator();
    std::lock_guard<std::mutex> lock(generator.mutex());
    archive.write("rng/cpu", generator.get_state());
  }
  std::int64_t cuda_devices = torch::cuda::is_available() ? static_cast<std::int64_t>(torch::cuda::device_count()) : 0;
  for (std::int64_t i = 0; i < cuda_devices; ++i) {
    auto generator = at::globalContext().defaultGenerator(c10::Device(c10::DeviceType::CUDA, static_cast<c10::DeviceIndex>(i)));
    std::lock_guard<std::mutex> lock(generator.mutex());
    archive.write(fmt::format("rng/cuda{}", i), generator.get_state());
  }
  header["state"]["cuda_generators"] = cuda_devices;
  std::ostringstream bytes;
  archive.save_to(bytes);
  write_file_atomically(store.path("state.ckpt"), encode_container(header, bytes.str()));
}

void Trainer::State::load_state() {
  const auto path = store.path("state.ckpt");
  const auto container = decode_container(read_file(path, "resume state"), path);
  const std::string source = "resume state '" + path + "'";
  // A state of another run (copied in by hand) resumed "silently" mixed two histories.
  const auto stored_id = run_id_in(container.header), own_id = run_id();
  if (!stored_id.empty() && !own_id.empty() && stored_id != own_id) {
    throw UsageError(source + " belongs to another run (run id " + stored_id + ") than run directory '" +
                     store.dir().string() + "' (run id " + own_id + ", in its config.json): it was "
                     "copied in from elsewhere. Put this run's own state.ckpt back, or delete the state.ckpt to start "
                     "this run over");
  }
  // The same for metrics.jsonl: the resumed run continues its records, so they must be its own.
  if (!own_id.empty()) {
    const auto records = store.metrics();
    for (std::size_t i = 0; i < records.size(); ++i) {
      const auto id = run_id_in(records[i]);
      if (!id.empty() && id != own_id) {
        throw UsageError("metrics file '" + store.path("metrics.jsonl") + "' line " + integer_text(i + 1) +
                         " belongs to another run (run id " + id + ") than run directory '" +
                         store.dir().string() + "' (run id " + own_id + "): it was copied in from "
                         "elsewhere. Put this run's own metrics.jsonl back, or delete the run directory to start over");
      }
    }
  }
  const auto tensors = read_weights_archive(container.archive, source);
  reading_container(source, [&] { restore_from(container.header, tensors, source); });
  // Outside the translation: the host's own callback (Lua) reports its errors itself.
  if (callbacks.restore_host_state && !host_state.is_null()) callbacks.restore_host_state(host_state);
}

void Trainer::State::restore_from(const nlohmann::json& header, const NamedTensors& tensors, const std::string& source) {
  const auto stored = [&](const std::string& name) {
    const auto found = tensors.find(name);
    if (found == tensors.end()) throw EnvironmentError(source + " is damaged inside: it has no tensor '" + name + "'");
    return found->second;
  };
  const auto& st = header.at("state");
  load_model_tensors(model, tensors, "model.", source);
  resumable_fields().load(st, source);

  const auto& opt = st.at("optimizer");
  optimizer = std::make_unique<Optimizer>(opt.at("kind").get<std::string>(), make_groups(options.lr));
  std::map<std::string, torch::Tensor> optimizer_tensors;
  for (const auto& key : st.at("optimizer_tensors")) {
    optimizer_tensors[key.get<std::string>()] = stored("optimizer/" + key.get<std::string>()).to(device);
  }
  optimizer->load_state(opt, optimizer_tensors);

  reset_hidden();
  for (std::size_t c = 0; c < hidden.size(); ++c) {
    for (std::size_t l = 0; l < hidden[c].size(); ++l) {
      // Of the dtype the model keeps (the LSTM's: also its shape; a Transformer's carried tokens
      // vary in length): an edited state fails here, not at the first forward pass.
      const auto restored = [&](const std::string& name, const torch::Tensor& fresh) {
        auto t = stored(name);
        const bool fits = t.scalar_type() == fresh.scalar_type() &&
                          (!fresh.is_floating_point() || fresh.numel() == 0 || t.sizes() == fresh.sizes());
        if (!fits) {
          throw EnvironmentError(source + " is damaged inside: its tensor '" + name + "' is not the hidden state this "
                                 "run keeps (another dtype or size)");
        }
        return t.to(device);
      };
      for (std::size_t t = 0; t < hidden[c][l].size(); ++t) hidden[c][l][t] = restored(hidden_entry(c, l, t), hidden[c][l][t]);
    }
  }
  {
    const auto rng = stored("rng/cpu");
    auto generator = at::detail::getDefaultCPUGenerator();
    std::lock_guard<std::mutex> lock(generator.mutex());
    generator.set_state(rng);
  }
  const auto cuda_saved = st.at("cuda_generators").get<std::int64_t>();
  const std::int64_t cuda_now = torch::cuda::is_available() ? static_cast<std::int64_t>(torch::cuda::device_count()) : 0;
  for (std::int64_t i = 0; i < std::min(cuda_saved, cuda_now); ++i) {
    const auto rng = stored(fmt::format("rng/cuda{}", i));
    auto generator = at::globalContext().defaultGenerator(c10::Device(c10::DeviceType::CUDA, static_cast<c10::DeviceIndex>(i)));
    std::lock_guard<std::mutex> lock(generator.mutex());
    generator.set_state(rng);
  }
}

std::int64_t Trainer::State::apply_frozen(const std::string& prefix, bool freeze) {
  std::int64_t matched = 0;
  for (std::size_t i = 0; i < params.size(); ++i) {
    if (names[i].rfind(prefix, 0) != 0) continue;
    ++matched;
    params[i].set_requires_grad(!freeze);
    if (freeze) params[i].mutable_grad().reset();
    if (freeze) frozen.insert(names[i]); else frozen.erase(names[i]);
  }
  return matched;
}

}  // namespace lmkit::training
