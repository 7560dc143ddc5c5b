#include "runtime/training/evaluate_request.h"

namespace lmkit::training {

EvalResult evaluate_stream(LanguageModel& model, const torch::Tensor& tokens, const EvaluateRequest& request,
                           const EvalProgress& progress) {
  if (request.cache) {
    CacheOptions cache = *request.cache;
    cache.batch_size = request.batch_size.value_or(kCacheEvalBatchSize);
    cache.bptt = request.bptt;
    return cache_evaluate(model, tokens, cache, progress);
  }
  return evaluate(model, tokens, request.batch_size.value_or(kEvalBatchSize), request.bptt, progress);
}

const config::BoundOptions<EvaluateRequest>& declared_options(config::Tag<EvaluateRequest>) {
  using R = EvaluateRequest;
  using config::Range;
  static const config::BoundOptions<R> options(
      "evaluate",
      {{"batch_size", &R::batch_size, Range::at_least(1), "columns (nil: main.py's 10, or pointer.py's 1 with a cache)"},
       {"bptt", &R::bptt, Range::at_least(1), "rows per window (the state is carried)"},
       {"cache", &R::cache, "a neural cache (Grave et al. 2017; AWD-LSTM's pointer.py): p = (1−λ)·p_model + λ·Σ_{i in "
                            "window, y_i = w} softmax(θ·h_t·h_i) over the column's last window contexts, once a window is full"}});
  return options;
}

}  // namespace lmkit::training
