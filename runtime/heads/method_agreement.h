// A head that computes the same quantity two ways must give one answer. A head written by a user
// (a Lua head with both forward and nll) could otherwise train and evaluate on an nll that is not
// the model's: an nll returning zeros reported perplexity 1.0 and "finished".
#pragma once
#include <string>

#include "runtime/core/torch.h"

namespace lmkit {

// Compares nll [M] with −log_probs[i, targets[i]] ([M, N] log-probabilities, targets [M], 0-based).
// Agreement: max |nll − ref| ≤ tol·(1 + max |ref|), tol 1e-4 in float32 and 1e-8 in float64 (an nll
// written another way — logsumexp minus the target's logit — differs from a gathered log_softmax by
// rounding, ~1e-6 relative in float32). On disagreement throws UsageError naming `what`, the worst
// row (1-based), its target, both values and the largest difference.
void check_nll_matches_log_probs(const torch::Tensor& nll, const torch::Tensor& log_probs, const torch::Tensor& targets,
                                 const std::string& what);

}  // namespace lmkit
