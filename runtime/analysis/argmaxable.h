// Which words a softmax layer can predict at all (Demeter et al. 2020, "stolen probability"; Grivas
// et al. 2022, "low-rank softmax can have unargmaxable classes"). With logits l = W h + b (W [N, d],
// b [N]), word i is argmaxable when some output state h makes it the strict top-1 word:
//   {h ∈ H : (w_i − w_j)ᵀh + b_i − b_j > 0  for all j ≠ i}  is not empty,
// for H = ℝ^d (free) or the box [−bound, bound]^d that the encoder can produce (an LSTM's or tanh's
// outputs: bound 1). Decided exactly by the linear program
//   t* = max t   subject to   (w_j − w_i)ᵀh + t ≤ b_i − b_j  (j ≠ i),  h ∈ H   (free: t ≤ 1),
// argmaxable ⇔ t* > tolerance. Two stages keep this cheap at vocabulary scale:
//   1. a scan: for each word a candidate h (box: bound·sign(w_i − w̄); free: a multiple of w_i − w̄)
//      and the top-1 word there; a top-1 word ahead by more than the tolerance is argmaxable,
//      with that h as its witness (sufficient, never a false "yes");
//   2. for the words the scan did not certify, cutting planes: the LP over the word's strongest
//      rivals only, re-solved with the rivals that beat it at the LP's h added, until that h makes it
//      the top-1 word (argmaxable) or the LP over a subset of the rows already has t* ≤ tolerance (a
//      relaxation: then no h exists at all, so unargmaxable).
// Words tied with another (equal rows and biases) are never the strict top-1: unargmaxable.
// A monotone pointwise head (SigSoftmax, GSS, LMS-PLIF: f strictly increasing) ranks words as its
// logits do, so its argmaxable words are those of its decoder; mixtures (MoS, MoC) have no such
// structure and observed_top1 counts which words lead on sampled contexts instead.
#pragma once
#include <cstdint>
#include <functional>
#include <string>

#include "runtime/config/bound_options.h"
#include "runtime/analysis/logp_matrix.h"
#include "runtime/core/torch.h"

namespace lmkit::analysis {

enum class HiddenRegion { kFree, kBox };
// "free", "box"; parse_hidden_region names the accepted ones on a bad name.
std::string hidden_region_name(HiddenRegion region);
HiddenRegion parse_hidden_region(const std::string& name);

struct ArgmaxableOptions {
  HiddenRegion region = HiddenRegion::kBox;
  double bound = 1.0;        // kBox: h ∈ [−bound, bound]^d
  // A best margin at or below this (in logit units) counts as unargmaxable: float32 logits cannot
  // resolve a smaller lead, and an LP solver's feasibility tolerance is of that order too.
  double tolerance = 1e-6;
  std::int64_t rivals = 32;  // rows in a word's first LP, and added per cutting-plane round
};
const config::BoundOptions<ArgmaxableOptions>& declared_options(config::Tag<ArgmaxableOptions>);

struct ArgmaxableResult {
  std::string method = "lp";
  std::string region;        // hidden_region_name of the options
  torch::Tensor argmaxable;  // bool [N]
  std::vector<std::int64_t> unargmaxable;  // the 0-based ids of the words that are not
  std::int64_t words = 0;
  // float64 [N]. Argmaxable words: the lead l_i − max_{j≠i} l_j at a witness h (a lower bound of
  // the best lead; in the free region at most 1, the LP's cap). Unargmaxable words: the optimum of
  // the last LP, an upper bound of the best lead (≤ tolerance).
  torch::Tensor margin;
  torch::Tensor witness;  // float64 [N, d]: the h that makes each argmaxable word the top-1 (zeros otherwise)
  std::int64_t by_scan = 0;     // words certified argmaxable by the scan
  std::int64_t by_lp = 0;       // words decided by linear programs
  std::int64_t lp_solves = 0;   // simplex runs in all
  std::int64_t lp_rows_max = 0; // the largest LP (rows) any word needed
  double seconds = 0;
};
inline auto declared_result(config::Tag<ArgmaxableResult>) {
  using R = ArgmaxableResult;
  using config::result_field;
  return config::result_table(
      result_field("argmaxable", &R::argmaxable, "bool [N]: whether each word can be the strict top-1"),
      result_field("margin", &R::margin, "float64 [N]: argmaxable: the lead at the witness h; otherwise an upper bound of the best lead (≤ tolerance)"),
      result_field("witness", &R::witness, "[N, d]: the h that makes each argmaxable word the top-1"),
      result_field("unargmaxable", &R::unargmaxable, "the 0-based ids of the other words"),
      result_field("words", &R::words, "N"), result_field("by_scan", &R::by_scan, "words certified by the scan"),
      result_field("by_lp", &R::by_lp, "words decided by linear programs"),
      result_field("lp_solves", &R::lp_solves, "simplex runs in all"),
      result_field("lp_rows_max", &R::lp_rows_max, "the largest LP (rows) a word needed"),
      result_field("seconds", &R::seconds, "wall time"), result_field("method", &R::method, "\"lp\""),
      result_field("region", &R::region, "the region of h"));
}

// Called with (words decided by LP so far, words the scan left for LP).
using ArgmaxableProgress = std::function<void(std::int64_t, std::int64_t)>;

// weight [N, d], bias [N] or undefined (no bias); any real dtype, any device (computed in float64
// on the CPU). UsageError for bad shapes, non-finite values, bound ≤ 0, tolerance < 0.
ArgmaxableResult argmaxable_words(const torch::Tensor& weight, const std::optional<torch::Tensor>& bias,
                                  const ArgmaxableOptions& options, const ArgmaxableProgress& progress = nullptr);

// How often each word is the top-1 of log P over the contexts of `tokens` (int64 [N]), streamed
// (Q is never held). A word with count > 0 is argmaxable; a count of 0 proves nothing.
torch::Tensor observed_top1(LanguageModel& model, const torch::Tensor& tokens, const LogpMatrixOptions& options,
                            const MatrixProgress& progress = nullptr);

// The argmaxable words of a model's output layer, decided by its head's structure:
//   a head whose f is strictly increasing (Softmax, SigSoftmax, GSS, LMS-PLIF, ...: the registry's
//   `monotone` capability) ranks words as its decoder does, so its words are argmaxable_words of the
//   decoder, exactly (method "lp");
//   any other head (MoS, MoC, Mixtape, Lua heads) has no single logit matrix: the words observed as
//   the top-1 of log P on the contexts of `tokens` (method "sampled", a lower bound), which are then
//   required — a UsageError names the heads that need none.
struct ModelArgmaxable {
  std::string method;        // "lp" or "sampled"
  ArgmaxableResult exact;    // "lp"
  torch::Tensor top1_counts; // "sampled": int64 [N]
  torch::Tensor argmaxable;  // bool [N], either way
  std::string note;          // one sentence for reports: which method, and what it proves
};
ModelArgmaxable model_argmaxable(LanguageModel& model, const ArgmaxableOptions& options,
                                 const torch::Tensor& tokens, const LogpMatrixOptions& sampling,
                                 const ArgmaxableProgress& exact_progress = nullptr,
                                 const MatrixProgress& sampled_progress = nullptr);

// model_argmaxable as one request and one table (lmkit.analysis.model_argmaxable): the exact
// result's fields for "lp"; argmaxable, top1_counts, unargmaxable, words and contexts for "sampled".
struct ModelArgmaxableOptions {
  ArgmaxableOptions exact;
  torch::Tensor tokens;        // the contexts a head without one logit matrix is observed on
  LogpMatrixOptions sampling;  // how they are read
};
const config::BoundOptions<ModelArgmaxableOptions>& declared_options(config::Tag<ModelArgmaxableOptions>);

struct ModelArgmaxableTable {
  std::string method;
  std::optional<std::string> region;
  torch::Tensor argmaxable, margin, witness, top1_counts;
  std::vector<std::int64_t> unargmaxable;
  std::int64_t words = 0;
  std::optional<std::int64_t> by_scan, by_lp, lp_solves, lp_rows_max, contexts;
  std::optional<double> seconds;
  std::string note;
};
inline auto declared_result(config::Tag<ModelArgmaxableTable>) {
  using R = ModelArgmaxableTable;
  using config::result_field;
  return config::result_table(
      result_field("method", &R::method, "\"lp\" (exact, as argmaxable on the decoder) or \"sampled\""),
      result_field("argmaxable", &R::argmaxable, "bool [N]"),
      result_field("unargmaxable", &R::unargmaxable, "the 0-based ids of the words not argmaxable (sampled: never observed)"),
      result_field("words", &R::words, "N"), result_field("note", &R::note, "what the method proves, for reports"),
      result_field("region", &R::region, "lp: the region of h"), result_field("margin", &R::margin, "lp: as argmaxable's"),
      result_field("witness", &R::witness, "lp: as argmaxable's"), result_field("by_scan", &R::by_scan, "lp"),
      result_field("by_lp", &R::by_lp, "lp"), result_field("lp_solves", &R::lp_solves, "lp"),
      result_field("lp_rows_max", &R::lp_rows_max, "lp"), result_field("seconds", &R::seconds, "lp"),
      result_field("top1_counts", &R::top1_counts, "sampled: int64 [N], how often each word is the top-1"),
      result_field("contexts", &R::contexts, "sampled: the contexts read"));
}
ModelArgmaxableTable model_argmaxable_table(LanguageModel& model, const ModelArgmaxableOptions& options,
                                            const ArgmaxableProgress& exact_progress,
                                            const MatrixProgress& sampled_progress);

}  // namespace lmkit::analysis
