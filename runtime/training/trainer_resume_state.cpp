// The resume state of a run: saved at step boundaries, loaded to go on step for step; freezing.
#include "runtime/training/trainer_state.h"

namespace lmkit::training {

void Trainer::State::save_state(bool in_loop) {
  json header = checkpoint_header(model);
  json counters = {{"stage", stage},
                   {"epoch", epoch},
                   {"step", step},
                   {"batch", batch},
                   {"averaging", averaging},
                   {"switched_at", switched_at ? json(*switched_at) : json()},
                   {"best_valid", best_valid},
                   {"best_epoch", best_epoch},
                   {"finetune_history", finetune_history},
                   {"finetune_best", finetune_best},
                   {"finetune_started", finetune_started},
                   {"finetune_done", finetune_done},
                   {"interval_loss", interval_loss},
                   {"interval_steps", interval_steps},
                   {"epoch_loss", epoch_loss},
                   {"epoch_steps", epoch_steps},
                   {"last_train_loss", std::isnan(last_train_loss) ? json() : json(last_train_loss)},
                   {"best_train_loss", std::isnan(best_train_loss) ? json() : json(best_train_loss)},
                   {"seconds", seconds()},
                   {"epoch_seconds_before", epoch_elapsed()},
                   {"epoch_seconds", epoch_seconds},
                   {"switch_history", policy->history()},
                   {"sampler", sampler->state()},
                   {"optimizer", optimizer->state_json()},
                   {"host_state", host_state},
                   {"host_state_in_loop", in_loop},
                   {"frozen", std::vector<std::string>(frozen.begin(), frozen.end())},
                   {"metrics", store.metrics().size()}};
  // Infinity is not JSON: store the best loss as null until there is one.
  if (std::isinf(best_valid)) counters["best_valid"] = nullptr;
  if (std::isinf(finetune_best)) counters["finetune_best"] = nullptr;
  header["state"] = counters;

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
  stage = st.at("stage").get<std::string>();
  epoch = st.at("epoch").get<std::int64_t>();
  step = st.at("step").get<std::int64_t>();
  batch = st.at("batch").get<std::int64_t>();
  averaging = st.at("averaging").get<bool>();
  if (!st.at("switched_at").is_null()) switched_at = st.at("switched_at").get<std::int64_t>();
  best_valid = st.at("best_valid").is_null() ? std::numeric_limits<double>::infinity() : st.at("best_valid").get<double>();
  best_epoch = st.at("best_epoch").get<std::int64_t>();
  finetune_history = st.at("finetune_history").get<std::vector<double>>();
  finetune_best = st.at("finetune_best").is_null() ? std::numeric_limits<double>::infinity() : st.at("finetune_best").get<double>();
  finetune_started = st.at("finetune_started").get<bool>();
  finetune_done = st.at("finetune_done").get<bool>();
  interval_loss = st.at("interval_loss").get<double>();
  interval_steps = st.at("interval_steps").get<std::int64_t>();
  epoch_loss = st.at("epoch_loss").get<double>();
  epoch_steps = st.at("epoch_steps").get<std::int64_t>();
  last_train_loss = st.at("last_train_loss").is_null() ? std::numeric_limits<double>::quiet_NaN() : st.at("last_train_loss").get<double>();
  // States written before best_train_loss existed resume without it (the summary then has none).
  best_train_loss = st.value("best_train_loss", json()).is_null() ? std::numeric_limits<double>::quiet_NaN()
                                                                   : st.at("best_train_loss").get<double>();
  seconds_before = st.at("seconds").get<double>();
  epoch_seconds_before = st.at("epoch_seconds_before").get<double>();
  epoch_seconds = st.at("epoch_seconds").get<std::vector<double>>();
  policy->set_history(st.at("switch_history").get<std::vector<double>>());
  sampler->set_state(st.at("sampler").get<std::string>());
  host_state = st.at("host_state");
  skip_capture_once = st.at("host_state_in_loop").get<bool>();
  for (const auto& name : st.at("frozen")) apply_frozen(name.get<std::string>(), true);

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
  // The metrics continue from the state: records written after it (by the session that was
  // stopped) are dropped, so the file matches an uninterrupted run.
  store.truncate_metrics(st.at("metrics").get<std::size_t>());
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
