// The softmax bottleneck's bound on the rank of a Softmax head's outputs over any number of
// contexts, from the width d of h and two facts about the model:
//   logits L = H·Wᵀ + 1·bᵀ            rank ≤ d + 1 with a bias b, d without;
//   log P = L − lse(L)·1ᵀ              one more (the per-context normalizer): d + 2, or d + 1.
// A centred h (a final LayerNorm: h = γ⊙n + β with 1ᵀn = 0, the Transformer's) lowers both by one
// when a bias is present and leaves the bias-free bound unchanged: H·Wᵀ = N·diag(γ)·Wᵀ + 1·(Wβ)ᵀ,
// where N's rows lie in the (d − 1)-dimensional complement of 1 and 1·(Wβ)ᵀ merges with 1·bᵀ —
// log P has rank ≤ d + 1 and the logits ≤ d, bias or not (measured in float64: d = 8 gives 9 for
// the Transformer, 10 for the AWD-LSTM; tests/runtime/models/transformer_model_test.cpp).
#pragma once
#include <cstdint>

namespace lmkit::analysis {

struct RankBoundFacts {
  bool bias = true;      // the logits have a bias (the AWD-LSTM's and the Transformer's decoders do)
  bool centred = false;  // h is centred (LanguageModelImpl::output_is_centred)
};

// What the bound adds to d: log P's rank ≤ d + logp_rank_offset(facts).
inline std::int64_t logp_rank_offset(const RankBoundFacts& facts) { return facts.centred ? 1 : (facts.bias ? 2 : 1); }
// The logits' rank ≤ d + logits_rank_offset(facts) (log P's offset less the normalizer's one).
inline std::int64_t logits_rank_offset(const RankBoundFacts& facts) { return logp_rank_offset(facts) - 1; }

// The bound itself, for scripts (lmkit.analysis.rank_bound): of log P, or of the logits when
// `logits`; UsageError for d < 1.
std::int64_t softmax_rank_bound(std::int64_t d, bool bias, bool centred, bool logits);

}  // namespace lmkit::analysis
