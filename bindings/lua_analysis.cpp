// lmkit.analysis: ranks and spectra of log-probability matrices, argmaxable words, word similarity
// of embeddings and the top-k next words of models — each function a runtime entry point bound by
// one line (entry_point.h).
#include "bindings/lua_analysis.h"

#include "bindings/entry_point.h"
#include "runtime/analysis/argmaxable.h"
#include "runtime/analysis/hidden_size.h"
#include "runtime/analysis/rank_bound.h"
#include "runtime/analysis/logp_matrix.h"
#include "runtime/analysis/matrix_rank.h"
#include "runtime/analysis/output_layer_file.h"
#include "runtime/analysis/spectra.h"
#include "runtime/analysis/top_k_contexts.h"
#include "runtime/analysis/word_similarity.h"

namespace lmkit::lua {
namespace {

template <auto Fn>
Function on(const char* name, const char* arguments, const char* summary) {
  return entry<Fn>("lmkit.analysis", name, arguments, summary);
}

}  // namespace

void open_analysis(lua_State* L, int module_index) {
  static const Function functions[] = {
      on<&analysis::svdvals>("svdvals", "Q", "Singular values of a matrix, descending, in its own precision (float64 on request); LAPACK gesdd on CPU, cuSOLVER on GPU — never through QᵀQ."),
      on<&analysis::has_float32_noise_floor>("has_float32_noise_floor", "sv, rows, cols", "Whether the singular values of a float64 matrix show float32's rounding noise (values between float64's and float32's Press tolerance, the largest within 1e5 of float32's): the matrix was computed in float32, and its float64 Press rank counts noise."),
      on<&analysis::press_rank>("press_rank", "sv, rows, cols, eps_dtype", "Number of singular values above 0.5·sqrt(rows+cols+1)·σ_max·eps(eps_dtype) (the thesis's rank; eps_dtype nil: float32's eps, as the reference computed it)."),
      on<&analysis::estimate_hidden_size>("hidden_size", "sv", "A softmax model's hidden size d from the singular values of its log-probabilities alone (Finlayson et al. 2024): the largest ratio σ_r/σ_{r+1} ends the signal, d = r − 2 (r − 1 without a decoder bias, or with centred = m:output_centred() for a Transformer); found = the gap reaches min_gap (a bottleneck's signature; heads that break the bottleneck leave none)."),
      on<&analysis::softmax_rank_bound>("rank_bound", "d, bias, centred, logits", "The softmax bottleneck's bound on the rank of a Softmax layer's outputs over any number of contexts: log P ≤ d + 2 with a bias, d + 1 without or when h is centred (a final LayerNorm: m:output_centred()); its logits (logits = true) one less."),
      on<&analysis::effective_rank>("effective_rank", "sv, eps", "Smallest k with Σ_{i≤k} σ_i² ≥ (1 − eps)·Σ σ_i²."),
      on<&analysis::logp_matrix>("logp_matrix", "model, tokens", "log P(·|c) for every context of the stream, in evaluation order: [contexts, vocab] (PTB test: 82,430 × 10,000)."),
      on<&analysis::logp_svdvals>("logp_svdvals", "model, tokens", "Singular values of the logP matrix (descending) and its size; the 4th result describes the method that ran, for reports."),
      on<&analysis::output_layer_entries>("output_layer", "path", "Which entries of a weight file (lmkit.read_tensors' formats) are the output layer: the decoder [N, d] and its bias, by name or guessed from common layouts (lm_head, decoder, embed_out, output, tied wte/embed_tokens/word_embeddings/encoder); several candidates are an error listing them."),
      on<&analysis::argmaxable_words>("argmaxable", "weight, bias", "Which words of a softmax layer l = W h + b (bias may be nil) can be the strict top-1 for some h (Demeter et al. 2020; Grivas et al. 2022): exact, by linear programs (GLPK) for the words that a fast scan of candidate h does not certify."),
      on<&analysis::model_argmaxable_table>("model_argmaxable", "model", "The argmaxable words of a model's output layer. Heads whose f is strictly increasing (Softmax, SigSoftmax, GSS, LMS-PLIF, ...) rank words as their decoder does: exact, as lmkit.analysis.argmaxable on the decoder (method = \"lp\"). Other heads (MoS, MoC, Lua heads) need tokens: the words that are the top-1 of log P on those contexts (method = \"sampled\", a lower bound; 'unargmaxable' lists the words never observed). note says which."),
      on<&input_embedding>("embedding", "model", "The input embedding matrix [vocab, emb] (the decoder's too when tied), detached."),
      on<&output_layer>("decoder", "model", "The output layer the head projects onto: weight [vocab, d] (the embedding itself when tied) and bias [vocab] (nil without one), detached: logits l = h·weightᵀ + bias."),
      on<&analysis::normalized_spectrum>("normalized_spectrum", "sv", "σ / σ_max."),
      on<&analysis::cumulative_share>("cumulative_share", "sv", "Σ_{j≤i} σ_j / Σ_j σ_j: the share of Σσ held by the first i singular values (not the MoS paper's Fig. 1: see normalized_cdf)."),
      on<&analysis::normalized_cdf>("normalized_cdf", "sv", "The empirical CDF of the normalized singular values σ/σ₁ (the MoS paper's Fig. 1, \"cumulative percentage of normalized singular values\"): values ascending, fractions[i] = i/n of them ≤ values[i] (float64)."),
      on<&analysis::projection_2d>("projection_2d", "E", "The rows of E, centered, projected on their top two principal directions: [rows, 2] (embedding plots)."),
      on<&analysis::pairwise_kl>("pairwise_kl", "Q", "Expected KL(P(·|c) ‖ P(·|c')) over context pairs c ≠ c' drawn uniformly from the rows of a log-probability matrix (MoS paper, Table 11)."),
      on<&analysis::refactorization_robustness>("refactorization_robustness", "Q", "The thesis's Alg. 5.1: keep the top `keep` singular values of Q, then factorize and reconstruct repeatedly; Press rank and mean squared deviation from the first reconstruction per iteration (Table 5.11)."),
      on<&analysis::noise_robustness>("noise_robustness", "Q, ladder", "The thesis's Alg. 5.2: the rank-`keep` truncation of Q plus Gaussian noise N(0, c/n²) (c/n² the variance: sd √c/n) for each c of the ladder; Press and ε-effective ranks (Tables 5.12, 5.13)."),
      on<&analysis::rank_report>("rank_report", "Q, eps_dtype", "Press rank and the ε-effective ranks for ε = 1e-3, 1e-4, 1e-5 (eps_dtype nil: float32's eps)."),
      on<&analysis::word_similarity>("word_similarity", "embedding_or_model, vocab",
          "Spearman ρ between the cosine similarity of embedding rows and human scores on the 13 word-similarity "
          "benchmarks (thesis Tables 5.2–5.4), in the thesis's order. Pairs with a word outside the vocabulary are "
          "skipped and counted; a pair listed again enters ρ once, with its later score (repeated counts them)."),
      on<&analysis::compare_similarity>("similarity_wins", "results",
          "Compares models' word_similarity results ({results_1, results_2, ...}, each a list of {name=, spearman=}), "
          "benchmarks matched by name (thesis Fig. 5.3)."),
      on<&analysis::similarity_benchmark_names>("similarity_benchmarks", "",
          "The 13 word-similarity benchmarks in the thesis's order (Table 5.2) and their file names."),
      on<&analysis::top_k_rows>("top_k_contexts", "model, vocab, contexts",
          "The k most likely next words after each context (a string of words, or {text=, next=} with the true next "
          "word), in evaluation mode (thesis Table 5.1). A context the stream lacks is read from a zero state. For a "
          "given next word: its probability, its rank among all words, and its position in top."),
      on<&analysis::read_contexts>("read_contexts", "path",
          "Contexts from a file: one per line as \"context<TAB>next word\" (the next word optional); blank lines and "
          "lines starting with '#' are skipped."),
  };
  lua_newtable(L);
  set_functions(L, -1, "lmkit.analysis", functions);
  register_doc(L, -1, "lmkit.analysis",
               "lmkit.analysis — ranks and spectra of log-probability matrices; word similarity of embeddings and "
               "top-k next words of language models.");
  lua_setfield(L, module_index, "analysis");
}

}  // namespace lmkit::lua
