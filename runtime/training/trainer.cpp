#include "runtime/training/trainer.h"

#include <sys/resource.h>

#include <chrono>
#include <cmath>
#include <limits>
#include <set>
#include <sstream>

#include <fmt/format.h>

#include "runtime/core/atomic_file.h"
#include "runtime/core/device.h"
#include "runtime/core/error.h"
#include "runtime/core/version.h"
#include "runtime/data/batching.h"
#include "runtime/data/bptt_sampler.h"
#include "runtime/data/corpus_origin.h"
#include "runtime/models/checkpoint.h"
#include "runtime/training/evaluation.h"
#include "runtime/training/optimizer.h"
#include "runtime/config/json_numbers.h"
#include "runtime/core/interruption.h"
#include "runtime/core/number_text.h"
#include "runtime/training/preemption.h"
#include "runtime/training/progress.h"
#include "runtime/training/switch_policy.h"

namespace lmkit::training {

using Clock = std::chrono::steady_clock;
using nlohmann::json;

// ---- options ---------------------------------------------------------------------------------

json to_json(const TrainOptions& o) {
  return {{"lr", o.lr},
          {"optimizer", o.optimizer},
          {"wdecay", o.wdecay},
          {"clip", o.clip},
          {"own_lr", o.own_lr ? json(*o.own_lr) : json()},
          {"batch_size", o.batch_size},
          {"small_batch_size", o.small_batch_size},
          {"bptt", o.bptt},
          {"max_delta", o.max_delta},
          {"epochs", o.epochs},
          {"switch", o.switch_policy},
          {"nonmono", o.nonmono},
          {"switch_epoch", o.switch_epoch},
          {"finetune_epochs", o.finetune_epochs},
          {"flood", o.flood ? json(*o.flood) : json()},
          {"eval_batch_size", o.eval_batch_size},
          {"test_batch_size", o.test_batch_size},
          {"log_interval", o.log_interval},
          {"seed", o.seed},
          {"max_seconds", o.max_seconds},
          {"test", o.test}};
}

TrainOptions train_options_from_json(const json& j) {
  TrainOptions o;
  const json defaults = to_json(o);
  for (const auto& item : j.items()) {
    if (!defaults.contains(item.key())) {
      throw ConfigError("training option '" + item.key() + "' is unknown; known: lr, optimizer, wdecay, clip, own_lr, "
                        "batch_size, small_batch_size, bptt, max_delta, epochs, switch, nonmono, switch_epoch, "
                        "finetune_epochs, flood, eval_batch_size, test_batch_size, log_interval, seed, max_seconds, test");
    }
  }
  auto get = [&](const char* key, auto& field) {
    if (!j.contains(key) || j.at(key).is_null()) return;
    field = config::json_option<std::decay_t<decltype(field)>>(j.at(key), "training option '" + std::string(key) + "'");
  };
  auto get_optional = [&](const char* key, std::optional<double>& field) {
    if (!j.contains(key) || j.at(key).is_null()) return;
    field = config::json_number(j.at(key), "training option '" + std::string(key) + "'");
  };
  get("lr", o.lr);
  get("optimizer", o.optimizer);
  get("wdecay", o.wdecay);
  get("clip", o.clip);
  get_optional("own_lr", o.own_lr);
  get("batch_size", o.batch_size);
  get("small_batch_size", o.small_batch_size);
  get("bptt", o.bptt);
  get("max_delta", o.max_delta);
  get("epochs", o.epochs);
  get("switch", o.switch_policy);
  get("nonmono", o.nonmono);
  get("switch_epoch", o.switch_epoch);
  get("finetune_epochs", o.finetune_epochs);
  get_optional("flood", o.flood);
  get("eval_batch_size", o.eval_batch_size);
  get("test_batch_size", o.test_batch_size);
  get("log_interval", o.log_interval);
  get("seed", o.seed);
  get("max_seconds", o.max_seconds);
  get("test", o.test);
  return o;
}

namespace {

void check_options(const TrainOptions& o) {
  auto positive = [](const char* key, double value) {
    if (!(value > 0)) throw UsageError("training option '" + std::string(key) + "' must be > 0, got " + describe_number(value));
  };
  positive("lr", o.lr);
  positive("batch_size", static_cast<double>(o.batch_size));
  positive("bptt", static_cast<double>(o.bptt));
  positive("eval_batch_size", static_cast<double>(o.eval_batch_size));
  positive("test_batch_size", static_cast<double>(o.test_batch_size));
  positive("log_interval", static_cast<double>(o.log_interval));
  if (o.own_lr) positive("own_lr", *o.own_lr);
  if (o.epochs < 0) throw UsageError("training option 'epochs' must be ≥ 0, got " + std::to_string(o.epochs));
  if (o.finetune_epochs < 0) throw UsageError("training option 'finetune_epochs' must be ≥ 0");
  if (!(o.clip >= 0)) throw UsageError("training option 'clip' must be ≥ 0 (0 turns clipping off)");
  if (!(o.wdecay >= 0)) throw UsageError("training option 'wdecay' must be ≥ 0");
  if (!(o.max_seconds >= 0)) throw UsageError("training option 'max_seconds' must be ≥ 0 (0: no limit)");
  if (o.optimizer != "sgd" && o.optimizer != "adam") {
    throw UsageError("training option 'optimizer' must be \"sgd\" or \"adam\", got '" + o.optimizer + "'");
  }
  const auto small = o.small_batch_size == 0 ? o.batch_size : o.small_batch_size;
  if (small < 1 || o.batch_size % small != 0) {
    throw UsageError("training option 'small_batch_size' (" + std::to_string(small) +
                     ") must divide batch_size (" + std::to_string(o.batch_size) + ")");
  }
  SwitchPolicy(o.switch_policy, o.nonmono, o.switch_epoch);  // validates
  if (o.flood && !(*o.flood >= 0)) throw UsageError("training option 'flood' must be ≥ 0");
}

// A switch the run's length cannot reach is almost always a forgotten setting (the ET default is
// the thesis's epoch 200): say so before hours are spent.
std::optional<std::string> switch_warning(const TrainOptions& o) {
  if (o.switch_policy == "et" && o.switch_epoch >= o.epochs) {
    return fmt::format("switch=\"et\" averages from the epoch after switch_epoch={}, but the run has epochs={}: "
                       "it will never switch to ASGD (set switch_epoch below {})",
                       o.switch_epoch, o.epochs, o.epochs);
  }
  // NT compares an epoch's loss with more than nonmono earlier ones: its first chance is after
  // epoch nonmono + 2, and averaging then needs one more epoch.
  if (o.switch_policy == "nt" && o.nonmono + 3 > o.epochs) {
    return fmt::format("switch=\"nt\" with nonmono={} can first switch after epoch {}, but the run has epochs={}: "
                       "it will never average (lower nonmono, or use switch=\"et\" with a switch_epoch)",
                       o.nonmono, o.nonmono + 2, o.epochs);
  }
  return std::nullopt;
}

std::int64_t peak_rss_bytes() {
  struct rusage usage {};
  getrusage(RUSAGE_SELF, &usage);
  return static_cast<std::int64_t>(usage.ru_maxrss) * 1024;  // Linux reports KiB
}

json parameter_counts(const LanguageModel& model) {
  json out;
  for (const auto& [part, n] : model->parameter_count()) out[part] = n;
  return out;
}

// Keys of config.json whose change does not make a different run (resume may change them).
const std::set<std::string> kResumableChanges = {"epochs", "max_seconds", "log_interval", "test"};

std::string describe_differences(const json& stored, const json& now, const std::string& prefix = "") {
  std::string out;
  for (const auto& item : now.items()) {
    const auto key = prefix + item.key();
    if (prefix == "train." && kResumableChanges.count(item.key())) continue;
    if (!stored.contains(item.key())) {
      out += "\n  " + key + ": not in the stored run, now " + item.value().dump();
    } else if (item.value().is_object() && stored.at(item.key()).is_object()) {
      out += describe_differences(stored.at(item.key()), item.value(), key + ".");
    } else if (stored.at(item.key()) != item.value()) {
      out += "\n  " + key + ": stored " + stored.at(item.key()).dump() + ", now " + item.value().dump();
    }
  }
  return out;
}

}  // namespace

json run_config(const LanguageModel& model, const data::Corpus& corpus, const TrainOptions& options) {
  json c;
  c["model"] = to_json(model->options);
  c["model"]["head"] = model->head->config();
  c["corpus"] = {{"name", corpus.name},
                 {"protocol", corpus.protocol},
                 {"source", corpus.source},
                 {"vocab_size", corpus.vocab ? corpus.vocab->size() : 0},
                 {"tokens", {{"train", corpus.train.numel()}, {"valid", corpus.valid.numel()}, {"test", corpus.test.numel()}}},
                 {"hash",
                  {{"train", fmt::format("{:016x}", data::tokens_hash(corpus.train))},
                   {"valid", fmt::format("{:016x}", data::tokens_hash(corpus.valid))},
                   {"test", fmt::format("{:016x}", data::tokens_hash(corpus.test))}}},
                 {"origin", corpus.origin}};
  c["train"] = to_json(options);
  return c;
}

// ---- the run's state -------------------------------------------------------------------------

struct Trainer::State {
  State(LanguageModel m, data::Corpus c, TrainOptions o, const std::string& dir, TrainCallbacks cb)
      : model(std::move(m)), corpus(std::move(c)), options(std::move(o)), store(dir), callbacks(std::move(cb)),
        device(model->encoder->embedding.device()),
        progress(Progress::detect_mode(), [this](const std::string& line) { store.append_log(line); }) {}

  LanguageModel model;
  data::Corpus corpus;
  TrainOptions options;
  RunStore store;
  TrainCallbacks callbacks;
  torch::Device device;
  Progress progress;
  json config;

  std::vector<std::string> names;       // parameter names, in named_parameters order
  std::vector<torch::Tensor> params;
  torch::Tensor train_source;           // [nbatch, batch_size] on the device
  std::unique_ptr<data::BpttSampler> sampler;
  std::unique_ptr<Optimizer> optimizer;
  std::unique_ptr<SwitchPolicy> policy;
  std::vector<LstmState> hidden;        // one per small-batch chunk

  // Counters (all in the resume state).
  std::string stage = "train";          // "train" or "finetune"
  std::int64_t epoch = 0;               // completed epochs of the stage
  std::int64_t step = 0;                // optimizer steps, all stages
  std::int64_t batch = 0;               // windows done in the current epoch
  bool averaging = false;
  std::optional<std::int64_t> switched_at;
  double best_valid = std::numeric_limits<double>::infinity();
  std::int64_t best_epoch = 0;
  std::vector<double> finetune_history;
  double finetune_best = std::numeric_limits<double>::infinity();
  bool finetune_started = false;
  bool finetune_done = false;
  double interval_loss = 0;
  std::int64_t interval_steps = 0;
  // Steps and tokens since interval_start, for the rates: the interval's loss may span a resume
  // (its sums are part of the saved state), but the clock restarts with each session and epoch.
  std::int64_t timed_steps = 0, timed_tokens = 0;
  double epoch_loss = 0;
  std::int64_t epoch_steps = 0;
  double last_train_loss = std::numeric_limits<double>::quiet_NaN();
  // The training loop's mean loss (dropout and every training-time perturbation on) of the epoch
  // with the best validation loss: the thesis's "train ppl" (SPEC §2).
  double best_train_loss = std::numeric_limits<double>::quiet_NaN();
  double seconds_before = 0;            // wall time of earlier sessions of this run
  double epoch_seconds_before = 0;      // of the current epoch, in earlier sessions
  std::vector<double> epoch_seconds;
  json host_state;
  bool skip_capture_once = false;
  std::set<std::string> frozen;

  bool resumed = false;
  bool stop_requested = false;
  std::string stop_reason;
  std::string status;
  std::string diagnostic;
  Clock::time_point session_start = Clock::now();
  Clock::time_point epoch_start = Clock::now();
  Clock::time_point interval_start = Clock::now();

  double seconds() const { return seconds_before + std::chrono::duration<double>(Clock::now() - session_start).count(); }
  double epoch_elapsed() const {
    return epoch_seconds_before + std::chrono::duration<double>(Clock::now() - epoch_start).count();
  }
  std::int64_t chunk_size() const { return options.small_batch_size == 0 ? options.batch_size : options.small_batch_size; }

  void log(const std::string& line) { progress.line(line); }
  void metric(const json& record) { store.append_metric(record); }

  // ---- setup ----

  std::vector<ParameterGroup> make_groups(double lr) {
    std::set<const void*> own;
    for (const auto& p : model->head->own_lr_parameters()) own.insert(p.unsafeGetTensorImpl());
    ParameterGroup main{"main", {}, lr, options.wdecay};
    // The training option, else the head's own rate (PLIF's 0.02), else the main one.
    ParameterGroup own_group{"own_lr", {}, options.own_lr.value_or(model->head->own_lr().value_or(lr)), options.wdecay};
    for (const auto& p : params) (own.count(p.unsafeGetTensorImpl()) ? own_group : main).params.push_back(p);
    std::vector<ParameterGroup> groups{main};
    if (!own_group.params.empty()) groups.push_back(own_group);
    return groups;
  }

  void reset_hidden() {
    hidden.clear();
    for (std::int64_t i = 0; i < options.batch_size / chunk_size(); ++i) hidden.push_back(model->init_hidden(chunk_size()));
  }

  // ---- resume state ----

  // Saves the state as of the last step boundary. host_state must have been captured there (the
  // capture reseeds the host RNG, so capturing twice at one boundary would change its stream).
  // in_loop: saved at the top of a training iteration, right after that boundary's capture; the
  // resumed run must then not capture again before its first window.
  void save_state(bool in_loop = false) {
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

  void load_state() {
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

  std::int64_t apply_frozen(const std::string& prefix, bool freeze) {
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

  // ---- training ----

  std::string nonfinite_diagnostic(const std::string& what) const {
    std::vector<std::string> bad_values, bad_grads;
    for (std::size_t i = 0; i < params.size(); ++i) {
      if (!torch::isfinite(params[i]).all().item<bool>()) bad_values.push_back(names[i]);
      if (params[i].grad().defined() && !torch::isfinite(params[i].grad()).all().item<bool>()) bad_grads.push_back(names[i]);
    }
    auto join = [](const std::vector<std::string>& v) {
      std::string s;
      for (const auto& x : v) s += (s.empty() ? "" : ", ") + x;
      return s;
    };
    std::string text = what + " at epoch " + std::to_string(epoch + 1) + ", step " + std::to_string(step + 1) + ". ";
    if (!bad_values.empty()) {
      text += "Non-finite values in: " + join(bad_values) + ". ";
    } else if (!bad_grads.empty()) {
      text += "All parameters are finite; non-finite gradients in: " + join(bad_grads) + ". ";
    } else {
      text += "All parameters are finite, so the " + model->head->kind() + " head produced it from finite inputs. ";
    }
    text += kept_checkpoints() + " Try a lower lr or a tighter clip.";
    return text;
  }

  // What a diverged run leaves to go back to, as it is on disk (no claim about files that are not).
  std::string kept_checkpoints() const {
    std::string kept;
    for (const char* name : {"best.ckpt", "last.ckpt", "state.ckpt"}) {
      if (store.exists(name)) kept += (kept.empty() ? "" : ", ") + std::string(name);
    }
    if (kept.empty()) return "No checkpoint had been written yet, so there is none to go back to.";
    return "The files of the last good epoch (" + std::to_string(epoch) + ") are kept: " + kept + ".";
  }

  // A validation loss that is not finite ends the run as a diverged training loss does.
  bool check_validation(const EvalResult& valid) {
    if (std::isfinite(valid.loss)) return true;
    diagnostic = "Validation loss is " + describe_number(valid.loss) + " after " +
                 (stage == "train" ? "epoch " : "finetune epoch ") + std::to_string(epoch) +
                 (averaging ? " (averaged weights)" : "") + ". " + kept_checkpoints() + " Try a lower lr or a tighter clip.";
    status = "diverged";
    log("Run diverged: " + diagnostic);
    return false;
  }

  // One optimizer step on one window; false when the run must stop (non-finite loss or gradient).
  bool train_step(const data::Batch& window) {
    auto& groups = optimizer->groups();
    auto& main = groups[0];
    const double base_lr = main.lr;
    // Every group's rate scales with the window (seq_len/bptt), the slopes' own as the main one.
    std::vector<double> base_lrs;
    for (auto& g : groups) {
      base_lrs.push_back(g.lr);
      g.lr *= window.lr_scale;
    }
    auto restore_lrs = [&] {
      for (std::size_t i = 0; i < groups.size(); ++i) groups[i].lr = base_lrs[i];
    };
    model->train();
    optimizer->zero_grad();
    const auto chunk = chunk_size();
    const auto chunks = options.batch_size / chunk;
    const double share = static_cast<double>(chunk) / static_cast<double>(options.batch_size);
    double raw_loss = 0;
    for (std::int64_t c = 0; c < chunks; ++c) {
      auto input = window.input.narrow(1, c * chunk, chunk);
      auto target = window.target.narrow(1, c * chunk, chunk);
      hidden[c] = detach_state(hidden[c]);
      auto out = model->loss(input, target, hidden[c]);
      const double value = out.loss.item<double>();
      if (!std::isfinite(value)) {
        restore_lrs();
        diagnostic = nonfinite_diagnostic("Training loss is " + describe_number(value));
        return false;
      }
      torch::Tensor nll = out.loss;
      if (options.flood) nll = (nll - *options.flood).abs() + *options.flood;
      torch::Tensor loss = nll + out.ar + out.tar;
      if (chunks > 1) loss = loss * share;
      loss.backward();
      hidden[c] = out.hidden;
      raw_loss += value * share;
    }
    // Gradient norm over every parameter (as torch.nn.utils.clip_grad_norm_), clipped to `clip`.
    double norm_sq = 0;
    for (const auto& p : params) {
      if (p.grad().defined()) norm_sq += p.grad().pow(2).sum().item<double>();
    }
    const double norm = std::sqrt(norm_sq);
    if (!std::isfinite(norm)) {
      restore_lrs();
      diagnostic = nonfinite_diagnostic("The gradient norm is not finite");
      return false;
    }
    if (options.clip > 0) {
      const double coefficient = options.clip / (norm + 1e-6);
      if (coefficient < 1) {
        torch::NoGradGuard no_grad;
        for (auto& p : params) {
          if (p.grad().defined()) p.mutable_grad().mul_(coefficient);
        }
      }
    }
    optimizer->step();
    restore_lrs();

    ++step;
    ++batch;
    const auto tokens = window.input.numel();
    interval_loss += raw_loss;
    ++interval_steps;
    ++timed_steps;
    timed_tokens += tokens;
    epoch_loss += raw_loss;
    ++epoch_steps;

    const double interval_seconds = std::chrono::duration<double>(Clock::now() - interval_start).count();
    const double rate = interval_seconds > 0 ? static_cast<double>(timed_tokens) / interval_seconds : 0;
    progress.update(window.position + window.seq_len, std::exp(epoch_loss / static_cast<double>(epoch_steps)), base_lr, rate);
    if (callbacks.on_step) {
      callbacks.on_step({{"stage", stage}, {"epoch", epoch + 1}, {"step", step}, {"batch", batch}, {"lr", base_lr},
                         {"loss", raw_loss}, {"seq_len", window.seq_len}, {"lr_scale", window.lr_scale}});
    }
    if (batch % options.log_interval == 0) {
      const double loss = interval_loss / static_cast<double>(interval_steps);
      metric({{"type", "step"}, {"stage", stage}, {"epoch", epoch + 1}, {"step", step}, {"batch", batch},
              {"lr", base_lr}, {"loss", loss}, {"ppl", std::exp(loss)}, {"tokens_per_s", rate},
              {"seconds", seconds()}});
      // Windows have random lengths, so the epoch's progress is told by position, not batch count.
      const double done = 100.0 * static_cast<double>(window.position + window.seq_len) /
                          static_cast<double>(train_source.size(0));
      progress.interval_line(fmt::format("| {} {:3d} | {:5d} batches ({:3.0f}%) | lr {:.4g} | ms/batch {:7.1f} | "
                                         "loss {:5.2f} | ppl {:8.2f} | {:.0f} tok/s",
                                         stage == "train" ? "epoch" : "finetune", epoch + 1, batch,
                                         std::min(100.0, done), base_lr,
                                         1000 * interval_seconds / static_cast<double>(timed_steps), loss,
                                         std::exp(loss), rate));
      interval_loss = 0;
      interval_steps = 0;
      restart_interval_clock();
    }
    return true;
  }

  void restart_interval_clock() {
    interval_start = Clock::now();
    timed_steps = 0;
    timed_tokens = 0;
  }

  // Runs the rest of the current epoch. Returns false when the run stops inside it.
  bool train_epoch() {
    if (batch == 0) {
      reset_hidden();
      epoch_loss = 0;
      epoch_steps = 0;
      epoch_seconds_before = 0;
      // Each epoch's log intervals start afresh, as the reference's train() resets total_loss.
      interval_loss = 0;
      interval_steps = 0;
    }
    epoch_start = Clock::now();
    restart_interval_clock();
    progress.start_epoch(epoch + 1, train_source.size(0), stage == "train" ? "epoch" : "finetune");
    data::Batch window;
    while (true) {
      if (callbacks.capture_host_state && !skip_capture_once) host_state = callbacks.capture_host_state();
      skip_capture_once = false;
      const int signal = preemption_signal();
      if (signal || interruption_requested()) {
        // Ctrl-C (interruption.h) stops exactly as a cluster's SIGTERM does: state saved, resumable.
        const bool interrupted = signal == 0 && take_interruption();
        const std::string cause = interrupted ? "interrupted (Ctrl-C)" : fmt::format("preempted (signal {})", signal);
        progress.end_epoch();
        save_state(/*in_loop=*/true);
        status = "preempted";
        stop_reason = cause;
        log(fmt::format("Training run {} at epoch {}, step {}: state saved to {}; lmkit.resume(\"{}\") or the "
                        "same recipe with the same run_dir continues.",
                        cause, epoch + 1, step, store.path("state.ckpt"), store.dir().string()));
        write_summary();
        if (!interrupted) set_preempted(true);
        throw Preempted("training run " + cause + " at epoch " + std::to_string(epoch + 1) + ", step " +
                        std::to_string(step) + "; state saved in " + store.path("state.ckpt") +
                        "; run the same recipe again or lmkit.resume(\"" + store.dir().string() + "\") to continue");
      }
      if (stop_requested || (options.max_seconds > 0 && seconds() >= options.max_seconds)) {
        progress.end_epoch();
        save_state(/*in_loop=*/true);
        status = stop_requested ? "stopped" : "time_limit";
        if (!stop_requested) stop_reason = fmt::format("wall-time budget of {} s used", options.max_seconds);
        log("Stopping at epoch " + std::to_string(epoch + 1) + ", step " + std::to_string(step) + ": " + stop_reason +
            " (resumable from state.ckpt)");
        return false;
      }
      if (!sampler->next(window)) break;
      window.input = window.input.to(device);
      window.target = window.target.to(device);
      if (!train_step(window)) {
        progress.end_epoch();
        status = "diverged";
        log("Run diverged: " + diagnostic);
        return false;
      }
    }
    progress.end_epoch();
    ++epoch;
    batch = 0;
    last_train_loss = epoch_steps > 0 ? epoch_loss / static_cast<double>(epoch_steps) : last_train_loss;
    return true;
  }

  EvalResult validate() {
    auto result = evaluate(model, corpus.valid, options.eval_batch_size, options.bptt);
    if (callbacks.on_eval) {
      callbacks.on_eval({{"split", "valid"}, {"stage", stage}, {"epoch", epoch}, {"loss", result.loss},
                         {"ppl", result.perplexity}, {"averaged", averaging}, {"tokens", result.tokens}});
    }
    return result;
  }

  void save_best(double valid_loss) {
    save_checkpoint(model, store.path("best.ckpt"));
    best_valid = valid_loss;
    best_epoch = epoch;
    best_train_loss = last_train_loss;
  }

  // Validation, checkpoints, switch and metrics after an epoch of the main stage; false when the
  // validation loss diverged (nothing of this epoch is saved then).
  bool end_of_training_epoch() {
    const double epoch_time = epoch_elapsed();
    epoch_seconds.push_back(epoch_time);
    bool best = false, switched = false;
    EvalResult valid;
    if (averaging) {
      optimizer->swap_with_average();
      valid = validate();
      if (valid.loss < best_valid) save_best(valid.loss), best = true;
      optimizer->swap_with_average();
      if (!check_validation(valid)) return false;
    } else {
      valid = validate();
      if (!check_validation(valid)) return false;
      if (valid.loss < best_valid) save_best(valid.loss), best = true;
      if (policy->observe(epoch, valid.loss) && options.optimizer == "sgd") {
        optimizer = std::make_unique<Optimizer>("asgd", make_groups(options.lr));
        averaging = true;
        switched = true;
        switched_at = epoch;
      }
    }
    finish_epoch(valid, epoch_time, best, switched);
    return true;
  }

  void finish_epoch(const EvalResult& valid, double epoch_time, bool best, bool switched) {
    metric({{"type", "epoch"}, {"stage", stage}, {"epoch", epoch}, {"step", step}, {"train_loss", last_train_loss},
            {"train_ppl", std::exp(last_train_loss)}, {"valid_loss", valid.loss}, {"valid_ppl", valid.perplexity},
            {"averaging", averaging}, {"switched", switched}, {"best", best}, {"epoch_seconds", epoch_time}});
    log(fmt::format("| end of {} {:3d} | time {:6.1f}s | train ppl {:8.2f} | valid ppl {:8.2f}{}{}{}",
                    stage == "train" ? "epoch" : "finetune epoch", epoch, epoch_time, std::exp(last_train_loss),
                    valid.perplexity, averaging && !switched ? " | averaged" : "", best ? " | best" : "",
                    switched ? " | switching to ASGD" : ""));
    if (switched && callbacks.on_switch) {
      callbacks.on_switch({{"epoch", epoch}, {"policy", options.switch_policy}, {"valid_loss", valid.loss}});
    }
    if (callbacks.on_epoch_end) {
      callbacks.on_epoch_end({{"stage", stage}, {"epoch", epoch}, {"step", step}, {"train_loss", last_train_loss},
                              {"valid_loss", valid.loss}, {"valid_ppl", valid.perplexity}, {"averaging", averaging},
                              {"switched", switched}, {"best", best}, {"epoch_seconds", epoch_time}});
    }
    save_checkpoint(model, store.path("last.ckpt"));
    if (callbacks.capture_host_state) host_state = callbacks.capture_host_state();
    save_state();
  }

  // AWD-LSTM's finetune.py: ASGD restarted from the best weights, until the non-monotone
  // criterion fires on the averaged validation loss (or finetune_epochs run out).
  bool finetune() {
    if (!finetune_started) {
      load_weights(model, store.path("best.ckpt"));
      optimizer = std::make_unique<Optimizer>("asgd", make_groups(options.lr));
      averaging = true;
      stage = "finetune";
      epoch = 0;
      batch = 0;
      finetune_history.clear();
      finetune_best = validate().loss;
      finetune_started = true;
      log(fmt::format("Finetuning from the best model (valid ppl {:.2f})", std::exp(finetune_best)));
      if (callbacks.capture_host_state) host_state = callbacks.capture_host_state();
      save_state();
    }
    while (!finetune_done && epoch < options.finetune_epochs) {
      if (!train_epoch()) return false;
      const double epoch_time = epoch_elapsed();
      epoch_seconds.push_back(epoch_time);
      optimizer->swap_with_average();
      const auto valid = validate();
      if (!std::isfinite(valid.loss)) {
        optimizer->swap_with_average();
        return check_validation(valid);
      }
      bool best = false;
      if (valid.loss < finetune_best) {
        finetune_best = valid.loss;
        if (valid.loss < best_valid) save_best(valid.loss), best = true;
      }
      optimizer->swap_with_average();
      if (non_monotone_trigger(finetune_history, valid.loss, options.nonmono)) finetune_done = true;
      finetune_history.push_back(valid.loss);
      finish_epoch(valid, epoch_time, best, false);
      if (finetune_done) log("Finetuning done: the validation loss stopped improving (non-monotone criterion)");
    }
    return true;
  }

  json summary_json(const std::optional<EvalResult>& valid, const std::optional<EvalResult>& test) const {
    double mean_epoch = 0;
    for (double s : epoch_seconds) mean_epoch += s;
    if (!epoch_seconds.empty()) mean_epoch /= static_cast<double>(epoch_seconds.size());
    json out = {{"status", status},
                {"run_dir", store.dir().string()},
                {"lmkit", build_info().lmkit_version},
                {"lmkit_git", build_info().git_revision},
                {"epochs", stage == "train" ? epoch : options.epochs},
                {"finetune_epochs", stage == "finetune" ? epoch : 0},
                {"steps", step},
                {"switch_epoch", switched_at ? json(*switched_at) : json()},
                {"best_epoch", best_epoch},
                {"train_loss", std::isnan(best_train_loss) ? json() : json(best_train_loss)},
                {"train_ppl", std::isnan(best_train_loss) ? json() : json(std::exp(best_train_loss))},
                {"last_train_loss", std::isnan(last_train_loss) ? json() : json(last_train_loss)},
                {"last_train_ppl", std::isnan(last_train_loss) ? json() : json(std::exp(last_train_loss))},
                {"parameters", parameter_counts(model)},
                {"seconds_per_epoch", mean_epoch},
                {"seconds", seconds()},
                {"peak_rss_bytes", peak_rss_bytes()}};
    if (valid) out["valid_loss"] = valid->loss, out["valid_ppl"] = valid->perplexity;
    if (test) out["test_loss"] = test->loss, out["test_ppl"] = test->perplexity;
    if (!stop_reason.empty()) out["stop_reason"] = stop_reason;
    if (!diagnostic.empty()) out["diagnostic"] = diagnostic;
    return out;
  }

  json write_summary(const std::optional<EvalResult>& valid = std::nullopt, const std::optional<EvalResult>& test = std::nullopt) {
    auto summary = summary_json(valid, test);
    store.write_json("summary.json", summary);
    return summary;
  }
};

// ---- Trainer ---------------------------------------------------------------------------------

Trainer::Trainer(LanguageModel model, data::Corpus corpus, TrainOptions options, std::string run_dir,
                 TrainCallbacks callbacks) {
  if (!model) throw UsageError("train: no model");
  if (run_dir.empty()) throw UsageError("train: run_dir is required (the directory that keeps this run)");
  check_options(options);
  if (!corpus.vocab || corpus.vocab->size() != model->options.encoder().vocab_size()) {
    throw UsageError("train: the corpus has " + std::to_string(corpus.vocab ? corpus.vocab->size() : 0) +
                     " words but the model's vocab_size is " + std::to_string(model->options.encoder().vocab_size()));
  }
  s_ = std::make_unique<State>(std::move(model), std::move(corpus), std::move(options), run_dir, std::move(callbacks));
  auto& s = *s_;
  for (auto& item : s.model->named_parameters(/*recurse=*/true)) {
    s.names.push_back(item.key());
    s.params.push_back(item.value());
  }
  s.train_source = data::batchify(s.corpus.train, s.options.batch_size).to(s.device);
  if (s.train_source.size(0) < 3) {
    throw UsageError("train: " + std::to_string(s.corpus.train.numel()) + " training tokens are too few for batch_size " +
                     std::to_string(s.options.batch_size));
  }
  data::BpttSamplerOptions sampler_options;
  sampler_options.bptt = s.options.bptt;
  sampler_options.max_delta = s.options.max_delta;
  sampler_options.seed = s.options.seed;
  s.sampler = std::make_unique<data::BpttSampler>(s.train_source, sampler_options);
  s.policy = std::make_unique<SwitchPolicy>(s.options.switch_policy, s.options.nonmono, s.options.switch_epoch);
  s.config = run_config(s.model, s.corpus, s.options);

  const auto leftovers = remove_stale_temporaries(s.store.dir().string());
  if (leftovers.files > 0) {
    s.log(fmt::format("Removed {} temporary file{} ({:.1f} MB) left in {} by an interrupted writer", leftovers.files,
                      leftovers.files == 1 ? "" : "s", static_cast<double>(leftovers.bytes) / 1e6,
                      s.store.dir().string()));
  }
  if (s.store.exists("state.ckpt")) {
    const auto stored = s.store.read_json("config.json");
    const auto differences = describe_differences(stored, s.config);
    if (!differences.empty()) {
      throw UsageError("run directory '" + s.store.dir().string() + "' holds a run with another configuration:" +
                       differences + "\nUse another run_dir, or delete that directory to start over.");
    }
    if (s.store.exists("summary.json")) {
      const auto summary = s.store.read_json("summary.json");
      const auto status = summary.value("status", std::string());
      if (status == "finished" || status == "diverged") {
        throw UsageError("run directory '" + s.store.dir().string() + "' holds a " + status +
                         " run; read it with lmkit.open_run(dir), or use another run_dir to train again");
      }
    }
    s.load_state();
    s.resumed = true;
    s.store.write_json("config.json", s.config);  // epochs etc. may have changed
    s.log(fmt::format("Resuming {} from {} epoch {}, step {}", s.store.dir().string(), s.stage, s.epoch + 1, s.step));
  } else {
    s.store.truncate_metrics(0);  // a run that died before its first checkpoint starts over
    s.store.write_json("config.json", s.config);
    seed_torch(s.options.seed);
    s.optimizer = std::make_unique<Optimizer>(s.options.optimizer, s.make_groups(s.options.lr));
    s.reset_hidden();
  }
}

Trainer::~Trainer() = default;

json Trainer::run() {
  auto& s = *s_;
  PreemptionGuard guard;
  InterruptibleScope interruptible;
  clear_preemption();
  set_preempted(false);
  s.session_start = Clock::now();
  const auto counts = s.model->parameter_count();
  if (!s.resumed) {
    s.log(fmt::format("Training {} ({} parameters) on {} for {} epoch{}; run directory {}", s.model->head->kind(),
                      counts.at("total"), s.corpus.name, s.options.epochs, s.options.epochs == 1 ? "" : "s",
                      s.store.dir().string()));
  }
  if (const auto warning = switch_warning(s.options)) s.log("warning: " + *warning);
  bool running = true;
  while (running && s.stage == "train" && s.epoch < s.options.epochs) {
    if (!s.train_epoch() || !s.end_of_training_epoch()) {
      running = false;
      break;
    }
  }
  if (running && s.options.finetune_epochs > 0 && s.store.exists("best.ckpt")) running = s.finetune();
  if (s.status.empty()) s.status = "finished";

  std::optional<EvalResult> valid, test;
  if (s.store.exists("best.ckpt")) {
    load_weights(s.model, s.store.path("best.ckpt"));
    valid = evaluate(s.model, s.corpus.valid, s.options.eval_batch_size, s.options.bptt);
    if (s.options.test) {
      test = evaluate(s.model, s.corpus.test, s.options.test_batch_size, s.options.bptt);
      if (s.callbacks.on_eval) {
        s.callbacks.on_eval({{"split", "test"}, {"stage", "final"}, {"epoch", s.epoch}, {"loss", test->loss},
                             {"ppl", test->perplexity}, {"averaged", false}, {"tokens", test->tokens}});
      }
    }
    s.log(fmt::format("| {} | best epoch {} | valid ppl {:.2f}{}", s.status, s.best_epoch, valid->perplexity,
                      test ? fmt::format(" | test ppl {:.2f}", test->perplexity) : std::string()));
  }
  return s.write_summary(valid, test);
}

void Trainer::request_stop(const std::string& reason) {
  s_->stop_requested = true;
  s_->stop_reason = reason.empty() ? "stopped by a callback" : reason;
}

double Trainer::lr() const { return s_->optimizer->groups()[0].lr; }

void Trainer::set_lr(double lr) {
  if (!(lr > 0) || !std::isfinite(lr)) throw UsageError("set_lr: the learning rate must be finite and > 0, got " + describe_number(lr));
  s_->optimizer->groups()[0].lr = lr;
}

std::int64_t Trainer::set_frozen(const std::string& prefix, bool frozen) { return s_->apply_frozen(prefix, frozen); }

bool Trainer::resumed() const { return s_->resumed; }
const RunStore& Trainer::store() const { return s_->store; }
LanguageModel& Trainer::model() { return s_->model; }

}  // namespace lmkit::training
