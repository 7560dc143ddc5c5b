// A model's hidden size read off its outputs alone (Finlayson, Ren & Swayamdipta 2024; Carlini et al.
// 2024): a softmax head's log-probabilities log_softmax(H·Eᵀ + b) over n > d contexts span at most
// d + 2 dimensions (d from H·Eᵀ, one from the bias b, one from the per-context normalizer; d + 1
// without a bias — the thesis's "rank 402" for d = 400). Their singular values fall by orders of
// magnitude after the (d + 2)-th, down to the precision's rounding noise; the position of the
// largest multiplicative gap σ_r / σ_{r+1} gives r and so d = r − 2 (r − 1 without a bias, or for
// a centred h such as a Transformer's after its final LayerNorm: rank_bound.h). The
// search starts at the r of d = 1: the gap after σ_1 is the unigram direction's (every row of Q
// shares log P(w) up to the context's part), large for a model that has learnt little context.
// Heads that break the bottleneck (SigSoftmax, GSS, PLIF, MoS) leave no such gap: there the largest
// ratio is small and `found` is false — the thesis's rank tables read as a security property.
#pragma once
#include <cstdint>

#include "runtime/config/bound_options.h"
#include "runtime/config/declared_result.h"
#include "runtime/core/torch.h"

namespace lmkit::analysis {

struct HiddenSizeEstimate {
  std::int64_t signal = 0;       // r: singular values before the largest gap
  double gap = 0;                // σ_r / σ_{r+1} (infinity when σ_{r+1} is exactly 0)
  std::int64_t hidden_size = 0;  // r − 2 with a decoder bias, r − 1 without or for a centred h (at least 0)
  bool found = false;            // gap ≥ min_gap: a bottleneck's signature
};
inline auto declared_result(config::Tag<HiddenSizeEstimate>) {
  using E = HiddenSizeEstimate;
  return config::result_table(
      config::result_field("hidden_size", &E::hidden_size, "d = r − 2 with a decoder bias, r − 1 without or for a centred h"),
      config::result_field("signal", &E::signal, "r: the singular values before the largest gap"),
      config::result_field("gap", &E::gap, "σ_r / σ_{r+1} (inf when σ_{r+1} is exactly 0)"),
      config::result_field("found", &E::found, "gap ≥ min_gap: the bottleneck's signature"));
}

struct HiddenSizeOptions {
  bool bias = true;
  double min_gap = 1e3;
  bool centred = false;  // h centred (a final LayerNorm, as the Transformer's): log P's rank ≤ d + 1
};
const config::BoundOptions<HiddenSizeOptions>& declared_options(config::Tag<HiddenSizeOptions>);

// `singular_values` descending (any float dtype, at least 3 of them with a bias, 2 without or centred). `bias`: whether the model's
// logits have a bias (AWD-LSTM's decoder has one); `centred`: whether h is (m:output_centred()). `min_gap` > 1: the ratio a gap must reach to
// count as the signature (default 1e3: a float32 Q's noise floor sits ~1e-6 below its σ₁, the
// decay of real singular values within a spectrum is far gentler). UsageError otherwise.
HiddenSizeEstimate estimate_hidden_size(const torch::Tensor& singular_values, const HiddenSizeOptions& options = {});

}  // namespace lmkit::analysis
