#include <random>
#include <set>

#include "runtime/core/number_text.h"
#include "runtime/core/terminal_text.h"
#include "runtime/heads/stored_head_config.h"
#include "runtime/core/process_facts.h"
#include "runtime/runs/run_comparison.h"
#include "runtime/training/trainer_state.h"

namespace lmkit::training {

namespace {

// Keys of config.json whose change does not make a different run (resume may change them).
// More epochs or finetune epochs continue a run, a finished one included; finetune_lr may change
// until the finetune stage has begun (checked after the state is read).
const std::set<std::string> kResumableChanges = {"epochs",          "finetune_epochs", "finetune_lr",
                                                 "max_seconds",     "log_interval",    "test",
                                                 "steps_in_flight", "log_tensorboard", "cuda_graphs"};

// A split must give every column of its batch at least `rows` tokens (an input and its target;
// training needs one more, for a window of length 2). Checked before the first step, so that a
// small valid or test split is not found after an epoch or after all of training.
void check_split_fits(const char* split, const torch::Tensor& tokens, const char* option, std::int64_t batch_size,
                      std::int64_t rows) {
  const auto n = tokens.defined() ? tokens.numel() : 0;
  if (n / batch_size >= rows) return;
  const auto largest = n / rows;
  // A batch size near 2^63 (from a script or --set) must still get this message, not an overflow.
  std::int64_t needed = 0;
  const auto needed_text = __builtin_mul_overflow(batch_size, rows, &needed)
                               ? fmt::format("{} × {}", integer_text(batch_size), integer_text(rows))
                               : integer_text(needed);
  throw UsageError(fmt::format(
      "train: the {} split has {} token{}, too few for {} {}: each of its {} columns needs at least {} tokens, "
      "so it needs at least {}. {}",
      split, integer_text(n), n == 1 ? "" : "s", option, integer_text(batch_size), integer_text(batch_size),
      integer_text(rows), needed_text,
      largest >= 1 ? fmt::format("Set the training option {} to at most {}, or use a larger {} split.", option,
                                 integer_text(largest), split)
                   : fmt::format("Use a {} split of at least {} tokens.", split, integer_text(rows))));
}

// A run's identity, written into config.json when it is created and into every state it saves: a
// state.ckpt copied in from another run (same options, another seed or history) is told apart.
std::string new_run_id() {
  std::random_device device;
  const std::uint64_t high = device(), low = device();
  return fmt::format("{:016x}", (high << 32) ^ low ^ static_cast<std::uint64_t>(Clock::now().time_since_epoch().count()));
}

}  // namespace

void check_splits_fit_batches(const data::Corpus& corpus, const TrainOptions& options) {
  check_split_fits("train", corpus.train, "batch_size", options.batch_size, 3);
  check_split_fits("valid", corpus.valid, "eval_batch_size", options.eval_batch_size, 2);
  if (options.test) check_split_fits("test", corpus.test, "test_batch_size", options.test_batch_size, 2);
}

std::string describe_differences(const json& stored, const json& now, const std::string& prefix) {
  std::string out;
  for (const auto& item : now.items()) {
    const auto key = prefix + item.key();
    if (prefix == "train." && kResumableChanges.count(item.key())) continue;
    if (!stored.contains(item.key())) {
      // An option added later and left unset: the stored run ran without it, as this one would.
      if (item.value().is_null()) continue;
      out += "\n  " + key + ": not in the stored run, now " + item.value().dump();
    } else if (item.value().is_object() && stored.at(item.key()).is_object()) {
      out += describe_differences(stored.at(item.key()), item.value(), key + ".");
    } else if (stored.at(item.key()) != item.value()) {
      out += "\n  " + key + ": stored " + stored.at(item.key()).dump() + ", now " + item.value().dump();
    }
  }
  return out;
}

bool corpus_content_differs(const json& stored, const json& now) {
  if (!stored.is_object()) return false;
  for (const char* key : {"vocab_size", "tokens", "hash"}) {
    if (stored.contains(key) && now.contains(key) && stored.at(key) != now.at(key)) return true;
  }
  return false;
}

std::string corpus_changed_message(const std::string& dir, const json& stored, const json& now) {
  auto words = [](const json& c) { return c.contains("vocab_size") ? c.at("vocab_size").dump() : std::string("?"); };
  auto facts = [&](const json& c) {
    std::string text = words(c) + " words";
    if (c.contains("tokens") && c.at("tokens").is_object() && c.contains("hash") && c.at("hash").is_object()) {
      for (const char* split : {"train", "valid", "test"}) {
        if (!c.at("tokens").contains(split) || !c.at("hash").contains(split)) continue;
        text += std::string(", ") + split + " " + c.at("tokens").at(split).dump() + " tokens (hash " +
                c.at("hash").at(split).get<std::string>() + ")";
      }
    }
    return text;
  };
  const auto source = stored.value("source", std::string());
  return "run directory '" + dir + "': the corpus changed since this run started" +
         (source.empty() ? std::string() : " (" + source + ")") + ": it had " + facts(stored) + "; it has " +
         facts(now) + " now. A run continues only on the corpus it started with: put that corpus back, or " +
         "start a new run in another run_dir.";
}

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


// ---- setup ----

std::vector<ParameterGroup> Trainer::State::make_groups(double lr) {
  std::set<const void*> own;
  for (const auto& p : model->head->own_lr_parameters()) own.insert(p.unsafeGetTensorImpl());
  const bool adaptive = options.optimizer != "sgd";
  const bool decoupled = options.optimizer == "adamw";
  ParameterGroup main{"main", {}, lr, options.wdecay};
  // The training option, else the head's own rate (PLIF's 0.02: an SGD rate, thesis §4.3.2.1; under
  // Adam, whose steps do not scale with the gradient, it was 7-20× the main rate), else the main one.
  const double own_lr = options.own_lr.value_or(adaptive ? lr : model->head->own_lr().value_or(lr));
  // AdamW decays matrices only: biases, LayerNorm gains and other vectors — the own-lr parameters
  // among them (PLIF's slope vector) — keep their scale (the usual rule for Transformers, e.g.
  // GPT-2's and nanoGPT's).
  ParameterGroup own_group{"own_lr", {}, own_lr, decoupled ? 0.0 : options.wdecay};
  ParameterGroup no_decay{"no_decay", {}, lr, 0.0};
  for (const auto& p : params) {
    if (own.count(p.unsafeGetTensorImpl())) {
      own_group.params.push_back(p);
    } else if (decoupled && p.dim() < 2) {
      no_decay.params.push_back(p);
    } else {
      main.params.push_back(p);
    }
  }
  std::vector<ParameterGroup> groups{main};
  if (!own_group.params.empty()) groups.push_back(own_group);
  if (!no_decay.params.empty()) groups.push_back(no_decay);
  return groups;
}

void Trainer::State::reset_hidden() {
  hidden.clear();
  for (std::int64_t i = 0; i < options.batch_size / chunk_size(); ++i) hidden.push_back(model->init_hidden(chunk_size()));
}


// ---- Trainer ---------------------------------------------------------------------------------

Trainer::Trainer(LanguageModel model, data::Corpus corpus, TrainOptions options, std::string run_dir,
                 TrainCallbacks callbacks) {
  if (!model) throw UsageError("train: no model");
  if (run_dir.empty()) throw UsageError("train: run_dir is required (the directory that keeps this run)");
  check_train_options(options);
  s_ = std::make_unique<State>(std::move(model), std::move(corpus), std::move(options), run_dir, std::move(callbacks));
  auto& s = *s_;
  const auto corpus_words = s.corpus.vocab ? s.corpus.vocab->size() : 0;
  if (corpus_words != s.model->vocab_size()) {
    // Resuming with a corpus edited since the run started (the model rebuilt from config.json
    // keeps the old vocabulary): say that, not just that two sizes differ.
    if (s.store.exists("state.ckpt") && s.store.exists("config.json")) {
      const auto stored = s.store.read_json("config.json").value("corpus", json::object());
      const auto now = run_config(s.model, s.corpus, s.options).at("corpus");
      if (corpus_content_differs(stored, now)) throw UsageError(corpus_changed_message(s.store.dir().string(), stored, now));
    }
    throw UsageError("train: the corpus has " + integer_text(corpus_words) + " words but the model's vocab_size is " +
                     integer_text(s.model->vocab_size()));
  }
  for (auto& item : s.model->named_parameters(/*recurse=*/true)) {
    s.names.push_back(item.key());
    s.params.push_back(item.value());
  }
  // Checked here once, on the host: the training loop then skips the models' per-window checks
  // (each a synchronisation with a GPU).
  check_token_ids(s.corpus.train, s.model->vocab_size(), "the training tokens");
  check_splits_fit_batches(s.corpus, s.options);
  if (const auto context = s.model->encoder->longest_window(); context > 0) {
    // A window longer than the encoder reads at once cannot be trained on; said now, not at the first long window.
    const bool fixed = s.options.windows.value_or("variable") == "fixed";
    const auto longest = fixed ? s.options.bptt : s.options.bptt + std::max<std::int64_t>(0, s.options.max_delta);
    if (s.options.bptt > context || (!fixed && longest > context)) {
      throw UsageError("training option bptt = " + integer_text(s.options.bptt) + (fixed ? "" : " (windows up to bptt + max_delta = " + integer_text(longest) + ")") +
                       " is longer than the " + s.model->encoder_title() + "'s context of " + integer_text(context) +
                       " tokens: set bptt to at most the context" + (fixed ? "" : ", with windows = \"fixed\""));
    }
  }
  s.train_source = data::batchify(s.corpus.train, s.options.batch_size).to(s.device);
  data::BpttSamplerOptions sampler_options;
  sampler_options.bptt = s.options.bptt;
  sampler_options.max_delta = s.options.max_delta;
  if (s.options.windows.value_or("variable") == "fixed") {
    // Every window bptt long (Transformers train on fixed-length contexts): no random length, no cap.
    sampler_options.p_full = 1.0;
    sampler_options.sd = 0.0;
    sampler_options.max_delta = 0;
  }
  // AWD-LSTM's shortest window is 5 tokens; a shorter bptt lowers it (window_warning says what
  // such windows do to the rate).
  sampler_options.min_len = std::min<std::int64_t>(sampler_options.min_len, s.options.bptt);
  sampler_options.seed = s.options.seed;
  s.sampler = std::make_unique<data::BpttSampler>(s.train_source, sampler_options);
  s.policy = std::make_unique<SwitchPolicy>(s.options.switch_policy, s.options.nonmono, s.options.switch_epoch);
  // Compared as the folder it names, not as the text given (a run resumed from another directory).
  if (s.options.init_from) s.options.init_from = absolute_path(*s.options.init_from);
  s.config = run_config(s.model, s.corpus, s.options);
  // Asked before the run directory is touched: a build without event files says so and writes nothing.
  const bool tensorboard = tensorboard_requested(s.options.log_tensorboard);
  if (s.options.cuda_graphs != "off") {
    s.graphs = std::make_unique<StepGraphs>(s.options.cuda_graphs);
    // "on" is refused before the run directory is touched. A run resumed after its switch to ASGD
    // is not refused: its steps run eagerly, as every ASGD step does.
    if (const auto obstacles = s.graph_obstacles(s.options.optimizer); s.options.cuda_graphs == "on" && !obstacles.empty()) {
      throw UsageError("cuda_graphs = \"on\", but this run's steps cannot be CUDA graphs: " + obstacles +
                       ". Use cuda_graphs = \"auto\" (graphs where a step qualifies, each step launched otherwise) or \"off\"");
    }
  }

  const auto leftovers = remove_stale_temporaries(s.store.dir().string());
  if (leftovers.files > 0) {
    s.log(fmt::format("Removed {} temporary file{} ({:.1f} MB) left in {} by an interrupted writer", leftovers.files,
                      leftovers.files == 1 ? "" : "s", static_cast<double>(leftovers.bytes) / 1e6,
                      s.store.dir().string()));
  }
  if (s.store.exists("state.ckpt")) {
    auto stored = s.store.read_json("config.json");
    // A head option added since the run was written is compared as its default, which the run ran with.
    if (stored.contains("model") && stored["model"].is_object() && stored["model"].contains("head")) {
      stored["model"]["head"] = completed_head_config(stored["model"]["head"]);
    }
    if (corpus_content_differs(stored.value("corpus", json::object()), s.config.at("corpus"))) {
      throw UsageError(corpus_changed_message(s.store.dir().string(), stored.at("corpus"), s.config.at("corpus")));
    }
    // The run keeps its identity (a run created before identities has none: null, not compared).
    s.config["run_id"] = stored.value("run_id", json());
    const auto differences = describe_differences(stored, s.config);
    if (!differences.empty()) {
      throw UsageError("run directory '" + s.store.dir().string() + "' holds a run with another configuration:" +
                       differences + "\nUse another run_dir, or delete that directory to start over.");
    }
    const auto status = s.store.exists("summary.json")
                            ? s.store.read_json("summary.json").value("status", std::string())
                            : std::string();
    if (status == "diverged") {
      throw UsageError("run directory '" + s.store.dir().string() + "' holds a diverged run; read it with "
                       "lmkit.open_run(dir), or use another run_dir to train again (init_from = its best model)");
    }
    std::string continuing;
    if (status == "finished") {
      // A finished run trains on when it is given more to do: its history and best model go on.
      const auto at = s.stored_position();
      if (!s.has_more_epochs(at)) throw UsageError(s.finished_run_message(at));
      continuing = s.more_epochs_text(at);
    }
    s.load_state();
    // The main stage's length is fixed once finetuning has begun from its best model.
    const auto stored_epochs = stored.at("train").value("epochs", s.options.epochs);
    if (s.stage == "finetune" && s.options.epochs != stored_epochs) {
      throw UsageError("run directory '" + s.store.dir().string() + "' has begun its finetune stage after " +
                       integer_text(stored_epochs) + " epochs: epochs cannot change now (give finetune_epochs, or "
                       "start a new run from its best model with init_from)");
    }
    // Its rate too: the stage's optimizer was made with the stored one.
    const auto stored_finetune_lr = stored.at("train").value("finetune_lr", json());
    if (s.stage == "finetune" && stored_finetune_lr != s.config.at("train").at("finetune_lr")) {
      throw UsageError("run directory '" + s.store.dir().string() + "' has begun its finetune stage at finetune_lr " +
                       (stored_finetune_lr.is_null() ? std::string("nil (lr)") : stored_finetune_lr.dump()) +
                       ": finetune_lr cannot change now (leave it as it was, or start a new run from its best model "
                       "with init_from)");
    }
    if (!continuing.empty()) {
      s.log("Continuing the finished run " + s.store.dir().string() + ": " + continuing);
      // Its summary is of the earlier end: said so, so that a continuation stopped half-way reads as
      // resumable (lmkit status, lmkit resume), not as a finished run with epochs it never counted.
      auto summary = s.store.read_json("summary.json");
      summary["status"] = "continued";
      summary["continuing"] = continuing;
      s.store.write_json("summary.json", summary);
    }
    s.resumed = true;
    s.store.write_json("config.json", s.config);  // epochs etc. may have changed
    s.log(fmt::format("Resuming {} from {} epoch {}, step {}", s.store.dir().string(), s.stage, s.epoch + 1, s.step));
  } else {
    s.store.truncate_metrics(0);  // a run that died before its first checkpoint starts over
    s.config["run_id"] = new_run_id();
    s.store.write_json("config.json", s.config);
    seed_torch(s.options.seed);
    s.optimizer = std::make_unique<Optimizer>(s.options.optimizer, s.make_groups(s.options.lr));
    s.reset_hidden();
    if (s.options.init_from) s.start_from(*s.options.init_from);
  }
  // A new event file per session: a resumed run replays its steps bit for bit, so a step written
  // twice holds the same numbers in both files.
  if (tensorboard) {
    s.tensorboard = std::make_unique<TensorBoardWriter>(s.store.dir());
    // The HPARAMS tab: the run's settings beside its final scalars.
    const auto flat = flattened_settings(s.config);
    std::vector<std::pair<std::string, json>> settings;
    for (auto it = flat.begin(); it != flat.end(); ++it) settings.emplace_back(it.key(), it.value());
    s.tensorboard->write_hparams(settings, s.run_id());
  }
}

Trainer::~Trainer() = default;

json Trainer::run() {
  auto& s = *s_;
  if (!s.writer) throw UsageError("train: this trainer has run already; make a new one to continue its run");
  struct ReleaseWriter {
    State& state;
    ~ReleaseWriter() { state.writer.reset(); }
  } release_writer{s};
  PreemptionGuard guard;
  InterruptibleScope interruptible;
  clear_preemption();
  set_preempted(false);
  s.session_start = Clock::now();
  const auto counts = s.model->parameter_count();
  if (!s.resumed) {
    s.log(fmt::format("Training {} ({} parameters) on {} for {} epoch{} with {} at lr {}; run directory {}",
                      s.model->head->kind(), counts.at("total"), s.corpus.name, s.options.epochs,
                      s.options.epochs == 1 ? "" : "s", s.options.optimizer, describe_number(s.options.lr),
                      s.store.dir().string()));
  }
  if (const auto warning = switch_warning(s.options)) s.log("warning: " + *warning);
  if (const auto warning = window_warning(s.options)) s.log("warning: " + *warning);
  bool running = true;
  while (running && s.stage == "train" && s.epoch < s.options.epochs) {
    if (!s.train_epoch() || !s.end_of_training_epoch()) {
      running = false;
      break;
    }
  }
  if (running && s.options.finetune_epochs > 0 && s.has_best()) running = s.finetune();
  if (s.status.empty()) s.status = "finished";

  std::optional<EvalResult> valid, test;
  if (s.has_best() && s.load_best("valid_ppl and test_ppl are computed from it")) {
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
    if (s.tensorboard) {
      std::vector<std::pair<std::string, double>> final_scalars{{"final/valid_ppl", valid->perplexity},
                                                                {"final/valid_loss", valid->loss}};
      if (test) final_scalars.insert(final_scalars.end(), {{"final/test_ppl", test->perplexity}, {"final/test_loss", test->loss}});
      s.tensorboard->write_scalars(s.step, final_scalars);
    }
    // A best model worse than guessing every word alike learnt nothing useful: say so, in the log
    // and in summary.json, rather than a bare "finished".
    // Only for a run that ran its course: one stopped early (a callback, a time limit, Ctrl-C) may
    // simply not have got there yet, and a diverged one says so already.
    const auto words = s.model->vocab_size();
    if (s.status == "finished" && valid->perplexity > static_cast<double>(words)) {
      const std::string text = fmt::format(
          "the run diverged: its best valid ppl {:.2f} is worse than a uniform guess over its {} words (ppl {}). "
          "Lower lr, or check the optimizer and schedule against the encoder's (lmkit.train's defaults for a "
          "Transformer: optimizer = \"adamw\", lr = 1e-3, a warmup and a cosine; docs/training.md)",
          valid->perplexity, words, words);
      s.diagnostic += (s.diagnostic.empty() ? "" : " ") + text;
      s.log("warning: " + text);
    }
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

void Trainer::record(const std::map<std::string, double>& values) {
  if (values.empty()) throw UsageError("run:record{}: give the numbers to record, e.g. run:record{rank = 42}");
  if (values.size() > 64) {
    throw UsageError("run:record: " + integer_text(static_cast<std::int64_t>(values.size())) +
                     " numbers in one record; at most 64");
  }
  json record = s_->recording_at
                    ? json{{"type", "recipe"}, {"stage", s_->recording_at->stage}, {"epoch", s_->recording_at->epoch},
                           {"step", s_->recording_at->step}}
                    : json{{"type", "recipe"}, {"stage", s_->stage}, {"epoch", s_->batch > 0 ? s_->epoch + 1 : s_->epoch},
                           {"step", s_->step}};
  for (const auto& [name, value] : values) {
    if (!is_record_name(name)) {
      throw UsageError("run:record: '" + printable_text(name) + "' is no name for a number: letters, digits and _, " +
                       "not starting with a digit, at most 64 characters (e.g. rank_1)");
    }
    if (record.contains(name) || name == "run_id" || name == "batch") {
      throw UsageError("run:record: '" + name + "' is a field of every record (type, run_id, stage, epoch, step, " +
                       "batch); name the number otherwise (e.g. my_" + name + ")");
    }
    // The epoch records' own numbers: `lmkit compare --metric` would draw the two as one curve.
    static const std::set<std::string> epoch_numbers = {"train_loss", "train_ppl",     "valid_loss", "valid_ppl",
                                                        "averaging",  "switched",      "best",       "epoch_seconds"};
    if (epoch_numbers.count(name)) {
      throw UsageError("run:record: '" + name + "' is a number every epoch record has (lmkit compare --metric " + name +
                       " draws it); name yours otherwise (e.g. my_" + name + ")");
    }
    if (!std::isfinite(value)) {
      throw UsageError("run:record: " + name + " = " + describe_number(value) + " is not finite; metrics.jsonl " +
                       "keeps finite numbers (leave it out, or record a flag such as " + name + "_finite = 0)");
    }
    record[name] = value;
  }
  s_->metric(std::move(record));
}

void stop_training(Trainer& trainer, const std::optional<std::string>& reason) {
  trainer.request_stop(reason.value_or("stopped by a callback"));
}

namespace {

std::int64_t set_frozen_or_fail(Trainer& trainer, const std::string& prefix, bool frozen) {
  const auto n = trainer.set_frozen(prefix, frozen);
  if (n == 0) throw UsageError("no parameter name starts with '" + prefix + "' (see model:parameter_names())");
  return n;
}

}  // namespace

std::int64_t freeze_parameters(Trainer& trainer, const std::string& prefix) { return set_frozen_or_fail(trainer, prefix, true); }

std::int64_t unfreeze_parameters(Trainer& trainer, const std::string& prefix) {
  return set_frozen_or_fail(trainer, prefix, false);
}

}  // namespace lmkit::training

