// summary.json: what a run reports when it ends (or stops).
#include "runtime/data/unigram.h"
#include "runtime/training/trainer_state.h"

namespace lmkit::training {
namespace {

json parameter_counts(const LanguageModel& model) {
  json out;
  for (const auto& [part, n] : model->parameter_count()) out[part] = n;
  return out;
}

}  // namespace

std::int64_t peak_rss_bytes() {
  struct rusage usage {};
  getrusage(RUSAGE_SELF, &usage);
  return static_cast<std::int64_t>(usage.ru_maxrss) * 1024;  // Linux reports KiB
}

json Trainer::State::summary_json(const std::optional<EvalResult>& valid, const std::optional<EvalResult>& test) const {
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
  if (test) {
    out["test_loss"] = test->loss, out["test_ppl"] = test->perplexity;
    // The yardstick the test perplexity is read against (lmkit.report.yardsticks): the unigram
    // model of the training split's word frequencies. A pass over the splits, once per run.
    out["unigram_ppl"] = data::unigram_perplexity(corpus, "test");
  }
  if (!stop_reason.empty()) out["stop_reason"] = stop_reason;
  if (!diagnostic.empty()) out["diagnostic"] = diagnostic;
  if (graphs) {
    json graph_counts = {{"mode", graphs->mode()}, {"captured", graphs->captures()}, {"replayed", graphs->replays()}};
    if (const auto why = graph_disqualifier(); !why.empty()) graph_counts["eager_because"] = why;
    out["cuda_graphs"] = graph_counts;
  }
  return out;
}

json Trainer::State::write_summary(const std::optional<EvalResult>& valid, const std::optional<EvalResult>& test) {
  auto summary = summary_json(valid, test);
  store.write_json("summary.json", summary);
  return summary;
}

}  // namespace lmkit::training
