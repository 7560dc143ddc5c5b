// What lmkit.evaluate is asked, and how it is answered: the plain evaluation (AWD-LSTM's main.py)
// or, with a cache, the neural-cache evaluation (pointer.py) — each with its reference's batch size
// unless one is given: 10 (main.py's eval_batch_size) without a cache, 1 with one (pointer.py reads
// the test split with batch size 1).
#pragma once
#include <cstdint>
#include <optional>

#include "runtime/training/cache_evaluation.h"

namespace lmkit::training {

constexpr std::int64_t kEvalBatchSize = 10;
constexpr std::int64_t kCacheEvalBatchSize = 1;

struct EvaluateRequest {
  std::optional<std::int64_t> batch_size;  // default: kEvalBatchSize, or kCacheEvalBatchSize with a cache
  std::int64_t bptt = 70;
  std::optional<CacheOptions> cache;        // its window, θ and λ; its batch_size and bptt are the request's
};
const config::BoundOptions<EvaluateRequest>& declared_options(config::Tag<EvaluateRequest>);

EvalResult evaluate_stream(LanguageModel& model, const torch::Tensor& tokens, const EvaluateRequest& request,
                           const EvalProgress& progress = nullptr);

}  // namespace lmkit::training
