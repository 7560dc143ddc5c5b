#include "runtime/analysis/rank_bound.h"

#include "runtime/core/error.h"
#include "runtime/core/number_text.h"

namespace lmkit::analysis {

std::int64_t softmax_rank_bound(std::int64_t d, bool bias, bool centred, bool logits) {
  if (d < 1) throw UsageError("rank_bound: d must be at least 1, got " + integer_text(d));
  const RankBoundFacts facts{bias, centred};
  return d + (logits ? logits_rank_offset(facts) : logp_rank_offset(facts));
}

}  // namespace lmkit::analysis
