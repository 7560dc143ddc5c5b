#include "runtime/training/cache_evaluation.h"

#include <cmath>
#include <limits>
#include <string>

#include "runtime/core/error.h"
#include "runtime/core/interruption.h"
#include "runtime/core/number_text.h"
#include "runtime/data/batching.h"

namespace lmkit::training {

EvalResult cache_evaluate(LanguageModel& model, const torch::Tensor& tokens, const CacheOptions& o,
                          const EvalProgress& progress) {
  data::check_eval_stream(tokens, o.batch_size, o.bptt, "cache_evaluate");
  check_token_ids(tokens, model->vocab_size(), "the evaluated tokens");
  if (o.window < 1) throw UsageError("cache_evaluate: window must be ≥ 1, got " + integer_text(o.window));
  if (!(o.theta >= 0) || !std::isfinite(o.theta)) throw UsageError("cache_evaluate: theta must be finite and ≥ 0");
  if (!(o.lambda >= 0 && o.lambda <= 1)) throw UsageError("cache_evaluate: lambda must be in [0, 1]");
  model->eval();
  torch::NoGradGuard no_grad;
  InterruptibleScope interruptible;
  const auto device = model->embedding().device();
  const auto source = data::batchify(tokens, o.batch_size).to(device);
  data::EvalBatches batches(source, o.bptt);
  const auto total_windows = batches.size();
  auto hidden = model->init_hidden(o.batch_size);
  const double minus_inf = -std::numeric_limits<double>::infinity();
  const double log_model = o.lambda < 1 ? std::log1p(-o.lambda) : minus_inf;
  const double log_cache = o.lambda > 0 ? std::log(o.lambda) : minus_inf;

  torch::Tensor keys;     // [B, L, d]: the last `window` contexts' hidden states per column
  torch::Tensor next;     // [B, L]: the word that followed each
  std::int64_t seen = 0;  // contexts per column so far
  data::Batch batch;
  double total = 0;
  std::int64_t count = 0, done = 0;
  while (batches.next(batch)) {
    interruptible.poll("cache_evaluate");
    auto out = model->encode(batch.input, hidden);
    hidden = detach_state(out.state);
    const auto T = batch.input.size(0);
    // log p_model(target) from the head, in double for the mixture
    auto log_p = (-model->head->nll(out.output, batch.target.reshape({-1}), model->decoder()))
                     .reshape({T, o.batch_size}).t().to(torch::kFloat64);   // [B, T]
    const auto h = out.raw.transpose(0, 1).to(torch::kFloat64);             // [B, T, d]
    const auto y = batch.target.t();                                        // [B, T]
    const auto all_keys = keys.defined() ? torch::cat({keys, h}, 1) : h;    // [B, L + T, d]
    const auto all_next = next.defined() ? torch::cat({next, y}, 1) : y;    // [B, L + T]
    const std::int64_t L = keys.defined() ? keys.size(1) : 0;
    if (o.lambda > 0 && seen + T > o.window) {
      // Context t (0-based in this window) sits at L + t of all_keys and attends to [L + t − window, L + t).
      const auto scores = torch::bmm(h, all_keys.transpose(1, 2)) * o.theta;  // [B, T, L + T]
      const auto t_index = torch::arange(T, torch::TensorOptions().dtype(torch::kLong).device(device)).view({T, 1}) + L;
      const auto j_index = torch::arange(L + T, torch::TensorOptions().dtype(torch::kLong).device(device)).view({1, L + T});
      const auto in_window = (j_index < t_index).logical_and(j_index >= t_index - o.window);  // [T, L + T]
      const auto log_attention = torch::log_softmax(scores.masked_fill(in_window.logical_not(), minus_inf), 2);
      const auto hits = all_next.unsqueeze(1) == y.unsqueeze(2);                               // [B, T, L + T]
      auto log_p_cache =
          torch::logsumexp(log_attention.masked_fill(hits.logical_not().logical_or(in_window.logical_not()), minus_inf), 2);
      // a full window only: the cache joins once the column has seen `window` contexts
      const auto full = (torch::arange(T, torch::TensorOptions().dtype(torch::kLong).device(device)) + seen >= o.window);
      const auto mixed = torch::logaddexp(log_p + log_model, log_p_cache + log_cache);
      log_p = torch::where(full.view({1, T}), mixed, log_p);
    }
    total -= log_p.sum().item<double>();
    count += log_p.numel();
    seen += T;
    const auto keep = std::min<std::int64_t>(o.window, all_keys.size(1));
    keys = all_keys.narrow(1, all_keys.size(1) - keep, keep);
    next = all_next.narrow(1, all_next.size(1) - keep, keep);
    if (progress) progress(++done, total_windows);
  }
  return eval_result(total, count);
}

const config::BoundOptions<CacheOptions>& declared_options(config::Tag<CacheOptions>) {
  using config::Range;
  static const config::BoundOptions<CacheOptions> options(
      "cache", {{"window", &CacheOptions::window, Range::at_least(1), "contexts remembered per column"},
                {"theta", &CacheOptions::theta, Range::non_negative(), "θ: the flatness of the cache's attention"},
                {"lambda", &CacheOptions::lambda, Range{0.0, 1.0}, "λ: the cache's weight in the mixture"}});
  return options;
}

}  // namespace lmkit::training
