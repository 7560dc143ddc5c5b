// Synthetic languages whose true next-token distribution is known exactly, so that a model's
// perplexity can be compared with the best achievable one and the rank of the true log-probability
// matrix Q* is under control.
//
// A language has S states, a vocabulary of V words "w0".."w{V-1}", and per-state emission
// log-probabilities
//     B[s, ·] = log_softmax(H_s · Eᵀ + b)       H: S×d ~ N(0, 1), E: V×d ~ N(0, scale²/d),
//                                              b_w = −log(w + 1) (a Zipf-like prior; bias=false: 0)
// Two kinds of context → state dynamics:
//   "softmax": the state is a function of the previous word, s_t = g(w_{t−1}) (g random, s_1 = 0),
//              so each context has one known state and Q* has rows of B only: rank(Q*) = d + 1
//              (+1 with the bias) once S ≥ d + 2 states are visited — a language a softmax of
//              dimension d (+bias) expresses exactly.
//   "hmm":     a hidden Markov chain, s_{t+1} ~ A[s_t, ·] with A's rows softmax(transition_scale·N(0,1)),
//              s_1 uniform; the context only gives a belief α_t(s) = P(s_t = s | w_<t), and
//              Q*[t, ·] = log Σ_s α_t(s) exp(B[s, ·]) is a mixture of softmaxes: generically high rank.
// Q* is computed in float64 from the forward-filtered belief (Σ_s α_t(s)·exp(B[s, w]), B bounded,
// so nothing underflows). The entropy rate is estimated as the mean true NLL of a long sample; its
// exp() is the best perplexity any model can reach on this language.
//
// Sampling uses per-state alias tables (O(1) per token, no Torch in the loop) and the language's own
// mt19937_64, seeded from `seed` apart from the parameters' generator: the same seed gives the same
// parameters and the same token stream.
#pragma once
#include <cstdint>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "runtime/config/bound_options.h"
#include "runtime/core/torch.h"
#include "runtime/data/corpus.h"

namespace lmkit::data {

struct SyntheticOptions {
  std::int64_t vocab = 1000;
  std::int64_t states = 64;
  std::int64_t dim = 16;
  bool bias = true;
  std::string kind = "softmax";  // "softmax" or "hmm"
  double scale = 2.0;            // standard deviation of the emission logits H_s·Eᵀ
  double transition_scale = 2.0; // "hmm": larger is more predictable state changes
  std::uint64_t seed = 1;
};
const config::BoundOptions<SyntheticOptions>& declared_options(config::Tag<SyntheticOptions>);

class SyntheticLanguage {
 public:
  explicit SyntheticLanguage(SyntheticOptions options);

  // n tokens, int64 [n]. Continues the language's sampling stream; `seed` restarts it first.
  torch::Tensor generate(std::int64_t n, std::optional<std::uint64_t> seed = std::nullopt);
  // True log P(· | w_<t) for every position of `tokens` (a sequence starting at the language's
  // initial state): float64 [T, V].
  torch::Tensor log_probs(const torch::Tensor& tokens) const;
  // True −log P(w_t | w_<t) for every position: float64 [T] (no [T, V] matrix is built).
  torch::Tensor nll(const torch::Tensor& tokens) const;
  // Mean true NLL (nats/token) of a fresh sample of n tokens (drawn from a generator seeded from
  // `seed`, leaving the language's stream untouched).
  double entropy_rate(std::int64_t n = 1000000, std::uint64_t seed = 12345) const;
  // The rank of Q* the construction guarantees ("softmax": d + 1 + bias), or -1 ("hmm": high rank).
  std::int64_t expected_rank() const;

  // A corpus of three consecutive samples of the stream, vocabulary "w0".."w{V−1}".
  Corpus corpus(std::int64_t train, std::int64_t valid, std::int64_t test);

  const SyntheticOptions& options() const { return options_; }
  // float64 [S, V] and [S, S] ("hmm"; empty for "softmax").
  const torch::Tensor& emission_log_probs() const { return emission_; }
  const torch::Tensor& transitions() const { return transition_; }
  std::string describe() const;

 private:
  struct AliasTable {
    std::vector<double> accept;
    std::vector<std::int32_t> alias;
  };
  static AliasTable build_alias(const double* p, std::int64_t n);
  std::int32_t sample(const AliasTable& table, std::mt19937_64& engine) const;
  void sample_into(std::int64_t* out, std::int64_t n, std::mt19937_64& engine) const;
  // Calls visit(t, belief) for each position before seeing token t; belief has S entries.
  template <typename Visit>
  void filter(const std::int64_t* tokens, std::int64_t n, Visit&& visit) const;

  SyntheticOptions options_;
  torch::Tensor emission_;    // B, float64 [S, V]
  torch::Tensor transition_;  // A, float64 [S, S]
  std::vector<double> emission_prob_;    // exp(B), row-major
  std::vector<double> transition_prob_;  // A, row-major
  std::vector<std::int32_t> next_state_; // "softmax": g(w)
  std::vector<AliasTable> emit_tables_;
  std::vector<AliasTable> move_tables_;
  std::mt19937_64 stream_;
  std::optional<std::uint64_t> stream_seed_;  // the last explicit seed; none: seeded from the parameters
  std::vector<std::int64_t> stream_calls_;    // generate() sizes since that seed (each restarts the chain)
};

std::shared_ptr<SyntheticLanguage> make_synthetic_language(const SyntheticOptions& options);
// Nats per token on a fresh sample of n tokens (nil: 200,000), and its exp: no model does better.
double sampled_entropy_rate(const SyntheticLanguage& language, std::optional<std::int64_t> n);
double best_perplexity(const SyntheticLanguage& language, std::optional<std::int64_t> n);
// expected_rank, nil for "hmm" (high rank).
std::optional<std::int64_t> known_rank(const SyntheticLanguage& language);

// Split sizes of a synthetic corpus.
struct SplitSizes {
  std::int64_t train = 200000, valid = 20000, test = 20000;
};
const config::BoundOptions<SplitSizes>& declared_options(config::Tag<SplitSizes>);
Corpus language_corpus(SyntheticLanguage& language, const SplitSizes& sizes);

}  // namespace lmkit::data
