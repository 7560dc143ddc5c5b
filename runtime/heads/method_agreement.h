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

// What a user's head returns is checked where it enters lmkit: a wrong width, rank or dtype would
// otherwise surface as a Torch error far away, or not at all (N+5 columns gave loss 0 / ppl 1).
// UsageError naming `what`, the size and dtype expected and those given.
void check_head_output(const torch::Tensor& result, const std::vector<std::int64_t>& sizes, torch::ScalarType dtype,
                       const std::string& what);
// Rows of log-probabilities have logsumexp 0; the tolerance, 1e-3, admits float32 rounding over a
// large vocabulary (~1e-5) and nothing a real mistake produces (unnormalized logits are off by
// units). UsageError naming the worst row checked. `call` 0 checks every row; a later call checks at
// most kSampledRows rows, evenly spaced from an offset that moves with `call`, so every row position
// is checked within ceil(M / kSampledRows) calls and the check costs ~1% of a head's step instead of
// a logsumexp over the whole [M, N] (docs/lua-heads.md).
constexpr std::int64_t kSampledRows = 64;
void check_log_probabilities(const torch::Tensor& log_probs, const std::string& what, std::int64_t call = 0);
// −log p ≥ 0 (within the same tolerance): a negative value means unnormalized probabilities.
void check_nll_values(const torch::Tensor& nll, const std::string& what);

// A parameter a user's head declares must be a leaf that requires grad: one without grad would be
// counted as a parameter and never train; one computed from others (not a leaf) would make every
// step backpropagate into its graph a second time. UsageError naming `what` and the way out.
void check_user_head_parameter(const torch::Tensor& parameter, const std::string& what);

}  // namespace lmkit
