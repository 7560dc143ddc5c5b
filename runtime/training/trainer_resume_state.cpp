// The resume state of a run: saved at step boundaries, loaded to go on step for step; freezing.
#include "runtime/training/trainer_state.h"

namespace lmkit::training {

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
      archive.write(fmt::format("hidden/{}/{}/h", c, l), hidden[c][l].first.detach());
      archive.write(fmt::format("hidden/{}/{}/c", c, l), hidden[c][l].second.detach());
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
  const auto& st = container.header.at("state");
  std::istringstream bytes(container.archive);
  torch::serialize::InputArchive archive;
  archive.load_from(bytes, device);
  {
    torch::serialize::InputArchive model_archive;
    archive.read("model", model_archive);
    load_model_archive(model, model_archive, "resume state '" + path + "'");
  }
  resumable_fields().load(st, "resume state '" + path + "'");

  const auto& opt = st.at("optimizer");
  optimizer = std::make_unique<Optimizer>(opt.at("kind").get<std::string>(), make_groups(options.lr));
  std::map<std::string, torch::Tensor> tensors;
  for (const auto& key : st.at("optimizer_tensors")) {
    torch::Tensor t;
    archive.read("optimizer/" + key.get<std::string>(), t);
    tensors[key.get<std::string>()] = t;
  }
  optimizer->load_state(opt, tensors);

  reset_hidden();
  for (std::size_t c = 0; c < hidden.size(); ++c) {
    for (std::size_t l = 0; l < hidden[c].size(); ++l) {
      archive.read(fmt::format("hidden/{}/{}/h", c, l), hidden[c][l].first);
      archive.read(fmt::format("hidden/{}/{}/c", c, l), hidden[c][l].second);
    }
  }
  {
    torch::Tensor rng;
    archive.read("rng/cpu", rng);
    auto generator = at::detail::getDefaultCPUGenerator();
    std::lock_guard<std::mutex> lock(generator.mutex());
    generator.set_state(rng.to(torch::kCPU));
  }
  const auto cuda_saved = st.at("cuda_generators").get<std::int64_t>();
  const std::int64_t cuda_now = torch::cuda::is_available() ? static_cast<std::int64_t>(torch::cuda::device_count()) : 0;
  for (std::int64_t i = 0; i < std::min(cuda_saved, cuda_now); ++i) {
    torch::Tensor rng;
    archive.read(fmt::format("rng/cuda{}", i), rng);
    auto generator = at::globalContext().defaultGenerator(c10::Device(c10::DeviceType::CUDA, static_cast<c10::DeviceIndex>(i)));
    std::lock_guard<std::mutex> lock(generator.mutex());
    generator.set_state(rng.to(torch::kCPU));
  }
  if (callbacks.restore_host_state && !host_state.is_null()) callbacks.restore_host_state(host_state);
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
