// The protocol's loop: a step on a window, an epoch, validation, the best checkpoint, finetuning.
#include <filesystem>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "ops/graph_stream.h"
#include "runtime/core/exception_text.h"
#include "runtime/core/folders.h"
#include "runtime/core/host_read.h"
#include "runtime/core/number_text.h"
#include "runtime/models/checked_tokens.h"
#include "runtime/training/divergence_warning.h"
#include "runtime/training/gradient_clipping.h"
#include "runtime/training/lr_schedule.h"
#include "runtime/training/trainer_state.h"

namespace lmkit::training {

namespace {

// What init_from took from a checkpoint whose head is of another kind than the run's.
struct HeadTransfer {
  std::string file_kind;
  std::vector<std::string> kept, fresh, left_out;  // the run's head entries taken / started fresh; the file's unused
};

bool is_head_entry(const std::string& name) { return name.rfind("head.", 0) == 0; }

std::string joined(const std::vector<std::string>& names) {
  std::string text;
  for (const auto& name : names) text += (text.empty() ? "" : ", ") + name;
  return text;
}

// init_from's weights, the file read once. A checkpoint of the run's head kind loads whole. Across
// head kinds (a Softmax run's weights starting a MoS run, or the reverse) the encoder and decoder
// must fit as for any init_from; the run's head takes the file's entries of the same name and shape
// and starts fresh (its initialization) where the file has none, and the file's other head entries
// are left out: that is returned, to be said. A file that is no model checkpoint (a resume state, a
// header without a head) goes to load_weights, which names what it is.
std::optional<HeadTransfer> load_initial_weights(LanguageModel& model, const std::string& path) {
  const auto container = decode_container(read_file(path, "checkpoint"), path);
  const auto& header = container.header;
  const auto model_checkpoint_kind = [&]() -> std::optional<std::string> {
    if (!header.is_object() || header.contains("state")) return std::nullopt;
    const auto config = header.find("config");
    if (config == header.end() || !config->is_object()) return std::nullopt;
    const auto head = config->find("head");
    if (head == config->end() || !head->is_object()) return std::nullopt;
    const auto kind = head->find("kind");
    if (kind == head->end() || !kind->is_string() || kind->get<std::string>().empty()) return std::nullopt;
    return kind->get<std::string>();
  }();
  if (!model_checkpoint_kind) {
    load_weights(model, path);
    return std::nullopt;
  }
  const std::string source = "checkpoint '" + path + "'";
  auto tensors = read_weights_archive(container.archive, source);
  const auto& file_kind = *model_checkpoint_kind;
  if (file_kind == model->head->kind()) {
    load_model_tensors(model, tensors, "", source);
    return std::nullopt;
  }
  HeadTransfer transfer{file_kind, {}, {}, {}};
  std::set<std::string> own;
  const auto take = [&](const std::string& name, const torch::Tensor& value) {
    if (!is_head_entry(name)) return;
    own.insert(name);
    const auto found = tensors.find(name);
    if (found != tensors.end() && found->second.sizes() == value.sizes()) {
      transfer.kept.push_back(name);
      return;
    }
    transfer.fresh.push_back(name);
    tensors[name] = value.detach().to(torch::kCPU).clone();  // its own initialization, loaded back unchanged
  };
  for (const auto& item : model->named_parameters(/*recurse=*/true)) take(item.key(), item.value());
  for (const auto& item : model->named_buffers(/*recurse=*/true)) take(item.key(), item.value());
  for (const auto& item : tensors) {
    if (is_head_entry(item.first) && !own.count(item.first)) transfer.left_out.push_back(item.first);
  }
  try {
    load_model_tensors(model, tensors, "", source);
  } catch (const EnvironmentError& e) {
    // The head's entries fit by construction: what does not is the encoder or the decoder.
    throw EnvironmentError(std::string(e.what()) + ". Across head kinds the encoder and the decoder must fit: a " +
                           file_kind + " model's give this " + model->head->kind() +
                           " model its sizes (emb, nhid, nhidlast, the decoder's width; a head that projects, "
                           "MoS's kin, takes a decoder of width emb)");
  }
  return transfer;
}

}  // namespace

std::string Trainer::State::nonfinite_diagnostic(const std::string& what, const std::vector<double>& gradient_squares) const {
  std::vector<std::string> bad_values, bad_grads;
  for (std::size_t i = 0; i < params.size(); ++i) {
    // The weights are as they were before the step (its update and every later one were halted on
    // the device); the gradients are the step's own, as their squared norms came back.
    if (!torch::isfinite(params[i]).all().item<bool>()) bad_values.push_back(names[i]);
    if (i < gradient_squares.size() && !std::isfinite(gradient_squares[i])) bad_grads.push_back(names[i]);
  }
  auto join = [](const std::vector<std::string>& v) {
    std::string s;
    for (const auto& x : v) s += (s.empty() ? "" : ", ") + x;
    return s;
  };
  std::string text = what + " at epoch " + integer_text(epoch + 1) + ", step " + integer_text(step + 1) + ". ";
  if (!bad_values.empty()) {
    text += "Non-finite values in: " + join(bad_values) + ". ";
  } else if (!bad_grads.empty()) {
    text += "All parameters are finite; gradients with a non-finite norm (NaN, ∞, or past float32's range) in: " +
            join(bad_grads) + ". ";
  } else {
    text += "All parameters are finite, so the " + model->head->kind() + " head produced it from finite inputs. ";
  }
  text += kept_checkpoints() + " Try a lower lr or a tighter clip.";
  return text;
}

std::string Trainer::State::kept_checkpoints() const {
  std::string kept;
  for (const char* name : {"best.ckpt", "last.ckpt", "state.ckpt"}) {
    if (store.exists(name)) kept += (kept.empty() ? "" : ", ") + std::string(name);
  }
  if (kept.empty()) return "No checkpoint had been written yet, so there is none to go back to.";
  return "The files of the last good epoch (" + integer_text(epoch) + ") are kept: " + kept + ".";
}

bool Trainer::State::check_validation(const EvalResult& valid) {
  if (std::isfinite(valid.loss)) return true;
  diagnostic = "Validation loss is " + describe_number(valid.loss) + " after " +
               (stage == "train" ? "epoch " : "finetune epoch ") + integer_text(epoch) +
               (averaging ? " (averaged weights)" : "") + ". " + kept_checkpoints() + " Try a lower lr or a tighter clip.";
  status = "diverged";
  log("Run diverged: " + diagnostic);
  return false;
}

double Trainer::State::schedule_factor() const {
  // The finetune stage runs at its own constant rate (finetune.py has no schedule; a cosine's floor,
  // 0 by default, would train nothing).
  if (stage == "finetune" || (!options.schedule && !options.warmup)) return 1.0;
  // Relative to lr, so that every group (a head's own rate too) follows the same curve. Its length:
  // the main stage's windows of bptt tokens (exact for fixed windows; the cosine then stays at its floor).
  LrSchedule schedule;
  schedule.kind = options.schedule.value_or("constant");
  schedule.warmup = options.warmup.value_or(0);
  schedule.lr = 1.0;
  schedule.min_lr = options.min_lr.value_or(0.0) / options.lr;
  const std::int64_t rows = std::max<std::int64_t>(1, train_source.size(0) - 2);
  const std::int64_t windows = (rows + options.bptt - 1) / options.bptt;
  schedule.total_steps = std::max<std::int64_t>(1, options.epochs) * windows;
  return scheduled_lr(schedule, step);
}

torch::Tensor Trainer::State::launch_step(const torch::Tensor& window_input, const torch::Tensor& window_target,
                                          bool state_in_place) {
  optimizer->zero_grad();
  const auto chunk = chunk_size();
  const auto chunks = options.batch_size / chunk;
  const double share = static_cast<double>(chunk) / static_cast<double>(options.batch_size);
  // The step's loss stays on the device; it comes back with the norm through a deferred read.
  torch::Tensor step_loss;
  // The windows are slices of the training tokens, checked when the trainer was made; only this
  // loop is covered (callbacks run outside it and pass their own ids through the models' checks).
  const CheckedTokenStream checked;
  for (std::int64_t c = 0; c < chunks; ++c) {
    auto input = window_input.narrow(1, c * chunk, chunk);
    auto target = window_target.narrow(1, c * chunk, chunk);
    // A Transformer's training windows start from no earlier tokens (reading them exactly costs a
    // pass per position: sliding_context); the AWD-LSTM carries its state, detached.
    const bool separate = model->encoder->capabilities().separate_windows;
    if (separate || !state_in_place) hidden[c] = separate ? model->init_hidden(chunk) : detach_state(hidden[c]);
    auto out = model->loss(input, target, state_in_place ? detach_state(hidden[c]) : hidden[c]);
    torch::Tensor nll = out.loss;
    if (options.flood) nll = (nll - *options.flood).abs() + *options.flood;
    torch::Tensor loss = nll + out.ar + out.tar;
    if (chunks > 1) loss = loss * share;
    loss.backward();
    if (state_in_place && !separate) {
      copy_state_into(hidden[c], out.hidden);  // after the backward, which reads the state it began from
    } else {
      hidden[c] = out.hidden;
    }
    const auto part = out.loss.detach().to(torch::kFloat64) * share;
    step_loss = step_loss.defined() ? step_loss + part : part;
  }
  // Nothing here waits for the device: the norm, its clipping coefficient and whether the step is
  // finite stay there, the update is gated there on every step so far being finite, and the
  // step's numbers come back to the host through a deferred read.
  torch::Tensor squares;
  const auto norm = gradient_norm(params, &squares);
  const auto finite = all_finite(torch::stack({step_loss, norm}));
  // In place: a graph reads and writes the same tensor at every replay.
  if (!proceed.defined()) proceed = torch::ones({}, finite.options());
  proceed.bitwise_and_(finite);
  if (options.clip > 0) scale_gradients(params, clip_coefficient(norm, options.clip));
  optimizer->step(proceed);
  return torch::cat({step_loss.reshape({1}), norm.reshape({1}), squares});

}

bool Trainer::State::train_step(const data::Batch& window) {
  // With CUDA graphs, every step — the eager ones before a capture, the capture, the replays and
  // the read of the step's numbers — runs on the graphs' one stream (ops/graph_stream.h).
  std::optional<ops::GraphStreamScope> on_graph_stream;
  if (graphs) on_graph_stream.emplace(device);
  auto& groups = optimizer->groups();
  auto& main = groups[0];
  const double factor = schedule_factor();
  const double base_lr = main.lr * factor;
  // Every group's rate scales with the window (seq_len/bptt), the slopes' own as the main one, and
  // with the schedule.
  std::vector<double> base_lrs;
  for (auto& g : groups) {
    base_lrs.push_back(g.lr);
    g.lr *= window.lr_scale * factor;
  }
  auto restore_lrs = [&] {
    for (std::size_t i = 0; i < groups.size(); ++i) groups[i].lr = base_lrs[i];
  };
  model->train();
  const auto key = graph_key(window);
  // Graphs no step of this run can replay again (of an optimizer replaced, or when no step
  // qualifies any more) give their memory back.
  if (graphs) {
    if (!key.empty()) {
      graphs->serve(optimizer->id());
    } else if (graphs->holds_graphs()) {
      graphs->release();
    }
  }
  const torch::Tensor values =
      key.empty() ? launch_step(window.input, window.target, /*state_in_place=*/false) : graphed_step(key, window);
  restore_lrs();

  PendingStep pending;
  pending.epoch = epoch;
  pending.step = step;
  pending.batch = batch;
  pending.base_lr = base_lr;
  pending.lr_scale = window.lr_scale;
  pending.position = window.position;
  pending.seq_len = window.seq_len;
  pending.tokens = window.input.numel();
  pending.values.start(values);
  ++step;
  ++batch;
  in_flight.push_back(std::move(pending));
  // On a GPU one step stays in flight: the previous step's numbers are taken while this one runs.
  const auto depth = options.steps_in_flight.value_or(device.is_cpu() ? 0 : 1);
  return finish_pending(static_cast<std::size_t>(depth));
}

bool Trainer::State::finish_pending(std::size_t keep) {
  while (in_flight.size() > keep) {
    auto pending = std::move(in_flight.front());
    in_flight.pop_front();
    const auto values = pending.values.take();
    if (!finish_step(pending, values)) return false;
  }
  return true;
}

bool Trainer::State::finish_step(PendingStep& p, const std::vector<double>& values) {
  const double raw_loss = values.at(0), norm = values.at(1);
  if (!std::isfinite(raw_loss) || !std::isfinite(norm)) {
    // Back to the step that went wrong: the steps launched after it changed nothing (halted).
    epoch = p.epoch;
    step = p.step;
    batch = p.batch;
    in_flight.clear();
    if (!std::isfinite(raw_loss)) {
      // The gradients of a non-finite loss say nothing about the parameters: not named.
      diagnostic = nonfinite_diagnostic("Training loss is " + describe_number(raw_loss), {});
    } else {
      const std::vector<double> squares(values.begin() + 2, values.end());
      diagnostic = nonfinite_diagnostic("The gradient norm is not finite", squares);
    }
    return false;
  }
  const std::int64_t step_number = p.step + 1, batch_number = p.batch + 1;
  interval_loss += raw_loss;
  ++interval_steps;
  ++timed_steps;
  timed_tokens += p.tokens;
  epoch_loss += raw_loss;
  ++epoch_steps;

  const double interval_seconds = std::chrono::duration<double>(Clock::now() - interval_start).count();
  const double rate = interval_seconds > 0 ? static_cast<double>(timed_tokens) / interval_seconds : 0;
  progress.update(p.position + p.seq_len, std::exp(epoch_loss / static_cast<double>(epoch_steps)), p.base_lr, rate);
  if (callbacks.on_step) {
    // run:record inside the callback is of this step, though on a GPU the next one is queued by now.
    recording_at = RecordPosition{stage, p.epoch + 1, step_number};
    struct Clear {
      std::optional<RecordPosition>& at;
      ~Clear() { at.reset(); }
    } clear{recording_at};
    callbacks.on_step({{"stage", stage}, {"epoch", p.epoch + 1}, {"step", step_number}, {"batch", batch_number},
                       {"lr", p.base_lr}, {"loss", raw_loss}, {"seq_len", p.seq_len}, {"lr_scale", p.lr_scale}});
  }
  if (tensorboard) {
    // The step-level curve: about 50 points an epoch, whatever log_interval (200 steps is more than
    // an epoch of a small corpus), each the mean loss of the steps since the last.
    const std::int64_t rows = std::max<std::int64_t>(1, train_source.size(0) - 2);
    const std::int64_t every = std::max<std::int64_t>(1, (rows + options.bptt - 1) / options.bptt / 50);
    tensorboard_loss_sum += raw_loss;
    ++tensorboard_steps;
    if (batch_number % every == 0) {
      tensorboard->write_scalars(step_number, {{stage + "_steps/loss", tensorboard_loss_sum / static_cast<double>(tensorboard_steps)},
                                               {stage + "_steps/lr", p.base_lr}});
      tensorboard_loss_sum = 0;
      tensorboard_steps = 0;
    }
  }
  if (batch_number % options.log_interval == 0) {
    const double loss = interval_loss / static_cast<double>(interval_steps);
    metric({{"type", "step"}, {"stage", stage}, {"epoch", p.epoch + 1}, {"step", step_number}, {"batch", batch_number},
            {"lr", p.base_lr}, {"loss", loss}, {"ppl", std::exp(loss)}, {"tokens_per_s", rate},
            {"seconds", seconds()}});
    // Windows have random lengths, so the epoch's progress is told by position, not batch count.
    const double done = 100.0 * static_cast<double>(p.position + p.seq_len) /
                        static_cast<double>(train_source.size(0));
    progress.interval_line(fmt::format("| {} {:3d} | {:5d} batches ({:3.0f}%) | lr {:.4g} | ms/batch {:7.1f} | "
                                       "loss {:5.2f} | ppl {:8.2f} | {:.0f} tok/s",
                                       stage == "train" ? "epoch" : "finetune", p.epoch + 1, batch_number,
                                       std::min(100.0, done), p.base_lr,
                                       1000 * interval_seconds / static_cast<double>(timed_steps), loss,
                                       std::exp(loss), rate));
    interval_loss = 0;
    interval_steps = 0;
    restart_interval_clock();
  }
  return true;
}

void Trainer::State::restart_interval_clock() {
  interval_start = Clock::now();
  timed_steps = 0;
  timed_tokens = 0;
}

bool Trainer::State::train_epoch() {
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
    // Each condition read once: the flush below and the branch taken must agree.
    const int signal = preemption_signal();
    const bool interrupt = signal == 0 && interruption_requested();
    const bool stop = stop_requested;
    const bool out_of_time = options.max_seconds > 0 && seconds() >= options.max_seconds;
    // Before anything reads or saves the counters and sums, and before the host's random state is
    // captured (a pending step's on_step may draw from it), the steps in flight are finished.
    if ((signal || interrupt || stop || out_of_time) && !finish_pending(0)) {
      progress.end_epoch();
      status = "diverged";
      log("Run diverged: " + diagnostic);
      return false;
    }
    if (callbacks.capture_host_state && !skip_capture_once) host_state = callbacks.capture_host_state();
    skip_capture_once = false;
    if (signal || interrupt) {
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
      throw Preempted("training run " + cause + " at epoch " + integer_text(epoch + 1) + ", step " +
                      integer_text(step) + "; state saved in " + store.path("state.ckpt") +
                      "; run the same recipe again or lmkit.resume(\"" + store.dir().string() + "\") to continue");
    }
    if (stop || out_of_time) {
      progress.end_epoch();
      save_state(/*in_loop=*/true);
      status = stop ? "stopped" : "time_limit";
      if (!stop) stop_reason = fmt::format("wall-time budget of {} s used", options.max_seconds);
      log("Stopping at epoch " + integer_text(epoch + 1) + ", step " + integer_text(step) + ": " + stop_reason +
          " (resumable from state.ckpt)");
      return false;
    }
    if (!sampler->next(window)) {
      if (!finish_pending(0)) {
        progress.end_epoch();
        status = "diverged";
        log("Run diverged: " + diagnostic);
        return false;
      }
      break;
    }
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

EvalResult Trainer::State::validate() {
  auto result = evaluate(model, corpus.valid, options.eval_batch_size, options.bptt);
  if (callbacks.on_eval) {
    callbacks.on_eval({{"split", "valid"}, {"stage", stage}, {"epoch", epoch}, {"loss", result.loss},
                       {"ppl", result.perplexity}, {"averaged", averaging}, {"tokens", result.tokens}});
  }
  return result;
}

void Trainer::State::save_best(double valid_loss) {
  save_checkpoint(model, store.path("best.ckpt"), run_id());
  best_valid = valid_loss;
  best_epoch = epoch;
  best_train_loss = last_train_loss;
}

void Trainer::State::start_from(const std::string& source) {
  std::string path = source;
  if (is_folder(source)) {
    path = (std::filesystem::path(source) / "best.ckpt").string();
    if (!path_exists(path)) {
      throw UsageError("init_from = '" + source + "' is a folder without best.ckpt: a run directory whose first epoch "
                       "finished holds one (or give a checkpoint file: m:save's, a run's last.ckpt)");
    }
  } else if (!path_exists(source)) {
    throw UsageError("init_from = '" + source + "': no such run directory or checkpoint file");
  }
  const auto named = [&](const std::exception& e) { return "init_from = '" + source + "': " + e.what(); };
  std::optional<HeadTransfer> transfer;
  try {
    transfer = load_initial_weights(model, path);
  } catch (const UsageError& e) {
    throw UsageError(named(e));
  } catch (const ConfigError& e) {
    throw ConfigError(named(e));
  } catch (const EnvironmentError& e) {
    throw EnvironmentError(named(e));
  }
  if (transfer) {
    const auto kind = model->head->kind();
    log("init_from: " + path + " holds a " + transfer->file_kind + " model and this run's head is " + kind +
        ": the encoder and decoder are the file's" +
        (transfer->kept.empty() ? "" : "; the head takes the file's " + joined(transfer->kept)) +
        (transfer->fresh.empty() ? "" : "; the head starts fresh: " + joined(transfer->fresh)) +
        (transfer->left_out.empty() ? "" : "; left out, the file's " + transfer->file_kind + " head: " + joined(transfer->left_out)));
    metric({{"type", "init_from"}, {"source", path}, {"file_head", transfer->file_kind}, {"head", kind},
            {"head_kept", transfer->kept}, {"head_fresh", transfer->fresh}, {"left_out", transfer->left_out}});
  }
  const auto valid = validate();
  log(fmt::format("Starting from the weights of {} (valid ppl {:.2f})", path, valid.perplexity));
  save_best(valid.loss);
  if (callbacks.capture_host_state) host_state = callbacks.capture_host_state();
  save_state();
}

Trainer::State::StoredPosition Trainer::State::stored_position() const {
  const auto path = store.path("state.ckpt");
  const auto header = decode_container(read_file(path, "resume state"), path).header;
  StoredPosition at;
  reading_container("resume state '" + path + "'", [&] {
    const auto& state = header.at("state");
    at.stage = state.at("stage").get<std::string>();
    at.epoch = state.at("epoch").get<std::int64_t>();
    at.best_epoch = state.value("best_epoch", std::int64_t{0});
    at.finetune_done = state.value("finetune_done", false);
  });
  return at;
}

bool Trainer::State::has_more_epochs(const StoredPosition& at) const {
  if (at.stage == "train" && at.epoch < options.epochs) return true;
  if (options.finetune_epochs == 0 || !(at.best_epoch > 0 || options.init_from)) return false;
  return at.stage == "train" || (!at.finetune_done && at.epoch < options.finetune_epochs);
}

std::string Trainer::State::more_epochs_text(const StoredPosition& at) const {
  if (at.stage == "train" && at.epoch < options.epochs) {
    return "epochs " + integer_text(at.epoch) + " → " + integer_text(options.epochs) +
           (options.finetune_epochs > 0 ? ", then up to " + integer_text(options.finetune_epochs) + " finetune epochs" : "");
  }
  return "finetune epochs " + integer_text(at.stage == "finetune" ? at.epoch : 0) + " → " +
         integer_text(options.finetune_epochs);
}

std::string Trainer::State::finished_run_message(const StoredPosition& at) const {
  const auto dir = store.dir().string();
  const bool finetuned = at.stage == "finetune";
  std::string text = "run directory '" + dir + "' holds a finished run (" +
                     (finetuned ? "its finetune stage " + std::string(at.finetune_done ? "ended by the non-monotone criterion"
                                                                                         : "ran " + integer_text(at.epoch) + " epochs")
                                : integer_text(at.epoch) + " epochs") +
                     "). To train it further, ";
  if (!finetuned) {
    text += "continue it with more epochs (lmkit.resume(dir, {epochs = " + integer_text(at.epoch + 1) +
            " or more}); in a recipe --set epochs=...) or a finetune stage (finetune_epochs = N); or ";
  } else if (!at.finetune_done) {
    text += "give it more finetune epochs (finetune_epochs = " + integer_text(at.epoch + 1) + " or more); or ";
  }
  return text + "start a new run from its best model (lmkit.train{init_from = '" + dir +
         "', run_dir = another, ...}). lmkit.open_run(dir) reads it as it is.";
}

bool Trainer::State::load_best(const std::string& needed_for) {
  const auto path = store.path("best.ckpt");
  std::string problem;
  if (!store.exists("best.ckpt")) {
    problem = "is missing (deleted or moved while the run went on)";
  } else {
    try {
      load_weights(model, path, run_id());
      return true;
    } catch (const UsageError& e) {
      problem = std::string("is not this run's: ") + e.what();  // copied in from another run
    } catch (const std::exception&) {
      problem = "cannot be read: " + describe_exception(std::current_exception());
    }
  }
  const std::string text = fmt::format(
      "{} (the model of the best epoch, {}, valid ppl {:.2f}) {}; {}. Put it back and run the same command "
      "again (the run resumes from state.ckpt and only finishes), or train again in a new run_dir{}",
      path, integer_text(best_epoch), std::exp(best_valid), problem, needed_for,
      store.exists("last.ckpt") ? "; last.ckpt holds the weights of the last epoch." : ".");
  if (!status.empty() && status != "finished") {
    // A run that already stopped for another reason (diverged, stopped) keeps that status.
    diagnostic += (diagnostic.empty() ? "" : " ") + text;
    log("warning: " + text);
    return false;
  }
  status = "failed";
  diagnostic = text;
  log("Run failed: " + text);
  write_summary();
  throw EnvironmentError("training run failed: " + text);
}

bool Trainer::State::end_of_training_epoch() {
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

void Trainer::State::finish_epoch(const EvalResult& valid, double epoch_time, bool best, bool switched) {
  metric({{"type", "epoch"}, {"stage", stage}, {"epoch", epoch}, {"step", step}, {"train_loss", last_train_loss},
          {"train_ppl", std::exp(last_train_loss)}, {"valid_loss", valid.loss}, {"valid_ppl", valid.perplexity},
          {"averaging", averaging}, {"switched", switched}, {"best", best}, {"epoch_seconds", epoch_time}});
  log(fmt::format("| end of {} {:3d} | time {:6.1f}s | train ppl {:8.2f} | valid ppl {:8.2f}{}{}{}",
                  stage == "train" ? "epoch" : "finetune epoch", epoch, epoch_time, std::exp(last_train_loss),
                  valid.perplexity, averaging && !switched ? " | averaged" : "", best ? " | best" : "",
                  switched ? " | switching to ASGD" : ""));
  const auto warning = divergence_warning(last_train_loss, model->vocab_size(),
                                          (stage == "train" ? "epoch " : "finetune epoch ") + integer_text(epoch), options,
                                          !model->head->own_lr_parameters().empty());
  if (!warning.empty()) log("warning: " + warning);
  if (switched && callbacks.on_switch) {
    callbacks.on_switch({{"epoch", epoch}, {"policy", options.switch_policy}, {"valid_loss", valid.loss}});
  }
  if (callbacks.on_epoch_end) {
    callbacks.on_epoch_end({{"stage", stage}, {"epoch", epoch}, {"step", step}, {"train_loss", last_train_loss},
                            {"valid_loss", valid.loss}, {"valid_ppl", valid.perplexity}, {"averaging", averaging},
                            {"switched", switched}, {"best", best}, {"epoch_seconds", epoch_time}});
  }
  save_checkpoint(model, store.path("last.ckpt"), run_id());
  if (callbacks.capture_host_state) host_state = callbacks.capture_host_state();
  save_state();
}

bool Trainer::State::finetune() {
  if (!finetune_started) {
    load_best("finetuning starts from it");
    // check_train_options let the stage through only after SGD: the groups and their coupled decay
    // are the main stage's, at the stage's own rate.
    optimizer = std::make_unique<Optimizer>("asgd", make_groups(options.finetune_lr.value_or(options.lr)));
    averaging = true;
    stage = "finetune";
    epoch = 0;
    batch = 0;
    finetune_history.clear();
    finetune_best = validate().loss;
    finetune_started = true;
    log(fmt::format("Finetuning from the best model (valid ppl {:.2f}) with ASGD at lr {}", std::exp(finetune_best),
                    describe_number(options.finetune_lr.value_or(options.lr))));
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

}  // namespace lmkit::training
