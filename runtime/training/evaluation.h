// Perplexity of a model on a token stream, as AWD-LSTM's evaluate(): the stream batchified into
// `batch_size` columns, read in windows of `bptt` rows with the hidden state carried (detached)
// from window to window, dropout off. The result is the exact token mean: Σ_windows n_w·L_w / Σ n_w
// (n_w tokens, L_w their mean NLL), accumulated in double. (The reference divides by the number
// of rows instead of the rows predicted, which is off by one row per column; we do not copy that.)
//
// Dynamic evaluation (Krause et al. 2018, "Dynamic evaluation of neural sequence models", the
// RMS-normalized variant with a decay to the trained weights, as in their dynamiceval.py):
//   1. gradient statistics on the training stream (windows of `bptt`, `stats_batch_size` columns):
//      MS_p = sqrt(mean over windows of g_p²),  decrate_p = MS_p / Σ_q mean(MS_q)
//   2. over the evaluated stream (batch_size columns, windows of bptt): score the window with the
//      current weights, backpropagate its loss, then
//      θ ← θ − lr·g/(MS + ε) + min(1, λ·decrate)·(θ₀ − θ)
// The model's weights are restored afterwards. Defaults: lr 2e−3, λ 0.02, ε 1e−3, bptt 5 (the
// paper's PTB/WT2 settings for AWD-LSTM; the MoS repository suggests λ 0.075 on PTB, ε 2e−3 on WT2).
#pragma once
#include <cstdint>
#include <functional>

#include "runtime/config/bound_options.h"
#include "runtime/models/language_model.h"

namespace lmkit::training {

struct EvalResult {
  double loss = 0;          // mean NLL per token (nats)
  double perplexity = 0;    // exp(loss)
  std::int64_t tokens = 0;  // tokens scored
};
inline auto declared_result(config::Tag<EvalResult>) {
  return config::result_table(config::result_field("loss", &EvalResult::loss, "mean NLL per token (nats)"),
                              config::result_field("ppl", &EvalResult::perplexity, "exp(loss)"),
                              config::result_field("tokens", &EvalResult::tokens, "tokens scored"));
}

// The result of `tokens` tokens whose NLLs sum to total_nll (every evaluation ends with it).
EvalResult eval_result(double total_nll, std::int64_t tokens);

// Called after each window with (windows done, windows in all).
using EvalProgress = std::function<void(std::int64_t, std::int64_t)>;

// tokens: int64 [n] on any device (moved to the model's). Leaves the model in eval mode.
EvalResult evaluate(LanguageModel& model, const torch::Tensor& tokens, std::int64_t batch_size,
                    std::int64_t bptt = 70, const EvalProgress& progress = nullptr);

struct DynamicEvalOptions {
  double lr = 2e-3;
  double lamb = 0.02;
  double epsilon = 1e-3;
  std::int64_t bptt = 5;
  std::int64_t batch_size = 1;
  std::int64_t stats_batch_size = 100;
  std::int64_t max_stats_windows = -1;  // −1: the whole training stream
};
const config::BoundOptions<DynamicEvalOptions>& declared_options(config::Tag<DynamicEvalOptions>);

EvalResult dynamic_evaluate(LanguageModel& model, const torch::Tensor& train_tokens, const torch::Tensor& tokens,
                            const DynamicEvalOptions& options, const EvalProgress& progress = nullptr);

}  // namespace lmkit::training
