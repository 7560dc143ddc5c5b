#include "runtime/analysis/hidden_size.h"

#include <cmath>
#include <limits>
#include <string>

#include "runtime/analysis/rank_bound.h"
#include "runtime/core/error.h"
#include "runtime/core/number_text.h"
#include "runtime/tensor/tensor_format.h"

namespace lmkit::analysis {

const config::BoundOptions<HiddenSizeOptions>& declared_options(config::Tag<HiddenSizeOptions>) {
  using config::Range;
  static const config::BoundOptions<HiddenSizeOptions> options(
      "hidden_size",
      {{"bias", &HiddenSizeOptions::bias, "the model's logits have a bias"},
       {"centred", &HiddenSizeOptions::centred, "the model's h is centred by a final LayerNorm (a Transformer's: m:output_centred()): log P's rank ≤ d + 1, so d = r − 1"},
       {"min_gap", &HiddenSizeOptions::min_gap, Range{1.0, std::nullopt, true, false},
        "the ratio σ_r/σ_{r+1} a gap must reach to count as the signature"}});
  return options;
}

HiddenSizeEstimate estimate_hidden_size(const torch::Tensor& singular_values, const HiddenSizeOptions& options) {
  const double min_gap = options.min_gap;
  const auto offset = logp_rank_offset({options.bias, options.centred});  // log P's rank ≤ d + offset
  // r of d = 1: the first position the gap is searched at
  const std::int64_t first = offset + 1;
  if (singular_values.dim() != 1 || singular_values.size(0) < first + 1) {
    throw UsageError("hidden size: needs a 1-D tensor of at least " + integer_text(first + 1) +
                     " singular values, got size " + format_shape(singular_values.sizes()));
  }
  if (!(min_gap > 1.0)) throw UsageError("hidden size: min_gap must be > 1, got " + describe_number(min_gap));
  const auto sv = singular_values.detach().to(torch::kCPU, torch::kFloat64).contiguous();
  const double* s = sv.data_ptr<double>();
  const auto n = sv.size(0);
  for (std::int64_t i = 0; i < n; ++i) {
    if (!std::isfinite(s[i]) || s[i] < 0) throw UsageError("hidden size: singular values must be finite and ≥ 0");
    if (i > 0 && s[i] > s[i - 1] * (1 + 1e-12)) throw UsageError("hidden size: singular values must be descending");
  }
  HiddenSizeEstimate estimate;
  if (s[0] == 0) return estimate;  // the zero matrix: no signal at all
  for (std::int64_t r = first; r < n; ++r) {
    // an exact zero after a positive value is an infinite gap: the first one ends the signal
    const double ratio = s[r] == 0 ? std::numeric_limits<double>::infinity() : s[r - 1] / s[r];
    if (ratio > estimate.gap) {
      estimate.gap = ratio;
      estimate.signal = r;
    }
    if (s[r] == 0) break;
  }
  estimate.hidden_size = estimate.signal - offset;
  estimate.found = estimate.gap >= min_gap;
  return estimate;
}

}  // namespace lmkit::analysis
