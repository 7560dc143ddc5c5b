// Evaluation with a neural cache (Grave, Joulin & Usunier 2017, "Improving neural language models
// with a continuous cache"; the AWD-LSTM code's pointer.py): the model's distribution mixed with a
// distribution over the words that followed the most recent `window` contexts of the same column,
// weighted by how close those contexts' hidden states are to the current one:
//   p_cache(w | h_t) = Σ_{i ∈ window, y_i = w} softmax_i(θ·h_t·h_i)
//   p(w | h_t)       = (1 − λ)·p_model(w | h_t) + λ·p_cache(w | h_t)
// h is the last LSTM layer's output (pointer.py's rnn_outs[-1]), y_i the word after context i. The
// cache joins in once a column has seen `window` contexts (pointer.py: one context later); before
// that, p = p_model. Everything is in log space — log p = logaddexp(log(1−λ) + log p_model,
// log λ + logsumexp_{i: y_i = w} log_softmax(θ·h_t·h_i)) — and only the target's probability is
// formed, so no vocabulary-sized cache distribution is built. Any head: p_model is the head's.
// The stream is read as evaluate() reads it (batchified, windows of bptt, state carried, dropout
// off); pointer.py reads the test split with batch size 1. The defaults are pointer.py's (window
// 3785, θ ≈ 0.662, λ ≈ 0.128); its README runs PTB with window 500, θ 1.0, λ 0.1.
#pragma once
#include <cstdint>

#include "runtime/config/bound_options.h"
#include "runtime/training/evaluation.h"

namespace lmkit::training {

struct CacheOptions {
  std::int64_t window = 3785;  // contexts remembered per column
  double theta = 0.662;        // flatness of the cache's attention (θ = 0: uniform over the window)
  double lambda = 0.1279;      // the cache's weight in the mixture
  std::int64_t batch_size = 1;  // pointer.py's (lmkit.evaluate's default with a cache: evaluate_request.h)
  std::int64_t bptt = 70;
};
// window, θ and λ (batch_size and bptt are the evaluation request's).
const config::BoundOptions<CacheOptions>& declared_options(config::Tag<CacheOptions>);

// UsageError for window < 1, θ < 0 or not finite, λ outside [0, 1]. Leaves the model in eval mode.
EvalResult cache_evaluate(LanguageModel& model, const torch::Tensor& tokens, const CacheOptions& options,
                          const EvalProgress& progress = nullptr);

}  // namespace lmkit::training
