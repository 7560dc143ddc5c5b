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

}  // namespace lmkit::training
