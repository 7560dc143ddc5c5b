#include "bindings/lua_analysis.h"

#include <unistd.h>

#include <cstdio>

#include "bindings/entry_point.h"
#include "bindings/lua_call.h"
#include "bindings/lua_config.h"
#include "bindings/lua_heads.h"
#include "bindings/lua_model.h"
#include "bindings/lua_tensor.h"
#include "runtime/analysis/argmaxable.h"
#include "runtime/analysis/hidden_size.h"
#include "runtime/analysis/logp_matrix.h"
#include "runtime/analysis/matrix_rank.h"
#include "runtime/analysis/spectra.h"
#include "runtime/core/error.h"
#include "runtime/core/number_text.h"
#include "runtime/heads/head_registry.h"
#include "runtime/tensor/tensor_format.h"

namespace lmkit::lua {
namespace {

torch::ScalarType opt_eps_dtype(lua_State* L, int position) {
  const auto name = opt_string(L, position);
  return name ? parse_dtype(*name) : torch::kFloat32;
}

int analysis_press_rank(lua_State* L) {
  auto& sv = check_tensor(L, 1);
  const auto rows = check_integer(L, 2);
  const auto cols = check_integer(L, 3);
  lua_pushinteger(L, analysis::press_rank(sv, rows, cols, opt_eps_dtype(L, 4)));
  return 1;
}

int analysis_rank_report(lua_State* L) {
  auto& q = check_tensor(L, 1);
  const auto report = analysis::rank_report(q, opt_eps_dtype(L, 2));
  lua_createtable(L, 0, 6);
  set_integer(L, "press", report.press);
  set_number(L, "tolerance", report.tolerance);
  set_number(L, "sigma_max", report.sigma_max);
  set_integer(L, "rows", report.rows);
  set_integer(L, "cols", report.cols);
  entry_detail::push_one(L, report.effective);
  lua_setfield(L, -2, "effective");
  return 1;
}

// ---- model-facing: the logP matrix ----

analysis::LogpMatrixOptions logp_options(const Options& o) {
  analysis::LogpMatrixOptions options;
  options.batch_size = o.integer("batch_size").value_or(options.batch_size);
  options.bptt = o.integer("bptt").value_or(options.bptt);
  options.max_contexts = o.integer("max_contexts").value_or(options.max_contexts);
  if (auto dtype = o.string("dtype")) options.dtype = parse_dtype(*dtype);
  options.f_logits = o.boolean("f_logits").value_or(false);
  return options;
}

// A percentage on stderr while long work runs (a matrix's contexts, argmaxable's linear programs),
// when someone is watching.
analysis::MatrixProgress terminal_progress(const char* what, const char* unit = "contexts") {
  if (!::isatty(STDERR_FILENO)) return nullptr;
  return [what, unit, shown = -1](std::int64_t done, std::int64_t total) mutable {
    const int percent = total > 0 ? static_cast<int>(100 * done / total) : 100;
    if (percent == shown) return;
    shown = percent;
    std::fprintf(stderr, "\r%s: %3d%% (%lld/%lld %s)%s", what, percent, static_cast<long long>(done),
                 static_cast<long long>(total), unit, done >= total ? "\n" : "");
    std::fflush(stderr);
  };
}

int analysis_logp_matrix(lua_State* L) {
  LanguageModel model = check_model(L, 1);  // alive even if a Lua head closes it
  auto tokens = check_token_stream(L, 2);
  Options o(L, 3, {"batch_size", "bptt", "max_contexts", "dtype", "f_logits"});
  LuaCallScope scope(L);
  push_tensor(L, analysis::logp_matrix(model, tokens, logp_options(o), terminal_progress("logP matrix")));
  return 1;
}

int analysis_logp_svdvals(lua_State* L) {
  LanguageModel model = check_model(L, 1);  // alive even if a Lua head closes it
  auto tokens = check_token_stream(L, 2);
  Options o(L, 3, {"batch_size", "bptt", "max_contexts", "dtype", "f_logits", "method", "memory_gb", "block_rows"});
  analysis::LogpSpectrumOptions spectrum;
  if (auto method = o.string("method")) spectrum.method = analysis::parse_spectrum_method(*method);
  if (auto gib = o.number("memory_gb")) {
    if (!(*gib > 0 && *gib < 1e9)) throw ArgError(3, "option 'memory_gb' must be a positive number of GiB");
    spectrum.memory_limit_bytes = static_cast<std::int64_t>(*gib * 1024.0 * 1024.0 * 1024.0);
  }
  spectrum.block_rows = o.integer("block_rows").value_or(0);
  if (spectrum.block_rows < 0) throw ArgError(3, "option 'block_rows' must be ≥ 1 (or absent: 2·vocab)");
  LuaCallScope scope(L);
  const auto result = analysis::logp_singular_values(model, tokens, logp_options(o), spectrum,
                                                     terminal_progress("logP matrix, then its singular values"));
  push_tensor(L, result.singular_values);
  lua_pushinteger(L, result.rows);
  lua_pushinteger(L, result.cols);
  push_string(L, result.description);
  return 4;
}

int analysis_embedding(lua_State* L) {
  auto& model = check_model(L, 1);
  push_tensor(L, model->encoder->embedding.detach());
  return 1;
}

// ---- spectra and robustness ----

int analysis_decoder(lua_State* L) {
  auto& model = check_model(L, 1);
  const auto decoder = model->decoder();
  push_tensor(L, decoder.weight.detach());
  if (decoder.bias.defined()) {
    push_tensor(L, decoder.bias.detach());
  } else {
    lua_pushnil(L);
  }
  return 2;
}

// ---- argmaxable words ----

analysis::ArgmaxableOptions argmaxable_options(const Options& o, int position) {
  analysis::ArgmaxableOptions options;
  if (auto region = o.string("region")) options.region = analysis::parse_hidden_region(*region);
  options.bound = o.number("bound").value_or(options.bound);
  options.tolerance = o.number("tolerance").value_or(options.tolerance);
  if (auto rivals = o.integer("rivals")) {
    if (*rivals < 1) throw ArgError(position, "option 'rivals' must be ≥ 1, got " + integer_text(*rivals));
    options.rivals = *rivals;
  }
  return options;
}

// The ids (0-based, as token ids) where `mask` is true, as a Lua list.
void push_ids_where(lua_State* L, const torch::Tensor& mask) {
  const auto ids = mask.nonzero().flatten().to(torch::kInt64).contiguous();
  const auto* data = ids.data_ptr<std::int64_t>();
  lua_createtable(L, static_cast<int>(ids.numel()), 0);
  for (std::int64_t k = 0; k < ids.numel(); ++k) {
    lua_pushinteger(L, data[k]);
    lua_rawseti(L, -2, k + 1);
  }
}

void push_argmaxable(lua_State* L, const analysis::ArgmaxableResult& r, const analysis::ArgmaxableOptions& o) {
  lua_createtable(L, 0, 12);
  set_string(L, "method", "lp");
  set_string(L, "region", analysis::hidden_region_name(o.region));
  push_tensor(L, r.argmaxable);
  lua_setfield(L, -2, "argmaxable");
  push_tensor(L, r.margin);
  lua_setfield(L, -2, "margin");
  push_tensor(L, r.witness);
  lua_setfield(L, -2, "witness");
  push_ids_where(L, r.argmaxable.logical_not());
  lua_setfield(L, -2, "unargmaxable");
  set_integer(L, "words", r.argmaxable.numel());
  set_integer(L, "by_scan", r.by_scan);
  set_integer(L, "by_lp", r.by_lp);
  set_integer(L, "lp_solves", r.lp_solves);
  set_integer(L, "lp_rows_max", r.lp_rows_max);
  set_number(L, "seconds", r.seconds);
}

analysis::ArgmaxableProgress argmaxable_progress() {
  return terminal_progress("argmaxable: linear programs for the words the scan left", "words");
}

int analysis_argmaxable(lua_State* L) {
  auto& weight = check_tensor(L, 1);
  torch::Tensor bias;
  if (!lua_isnoneornil(L, 2)) bias = check_tensor(L, 2);
  Options o(L, 3, {"region", "bound", "tolerance", "rivals"});
  const auto options = argmaxable_options(o, 3);
  LuaCallScope scope(L);
  const auto result = analysis::argmaxable_words(weight, bias, options, argmaxable_progress());
  push_argmaxable(L, result, options);
  return 1;
}

int analysis_model_argmaxable(lua_State* L) {
  LanguageModel model = check_model(L, 1);  // alive even if a Lua head closes it
  Options o(L, 2, {"region", "bound", "tolerance", "rivals", "tokens", "batch_size", "bptt", "max_contexts"});
  const auto options = argmaxable_options(o, 2);
  torch::Tensor tokens;
  if (lua_istable(L, 2)) {
    lua_getfield(L, 2, "tokens");
    if (!lua_isnil(L, -1)) tokens = check_token_stream(L, -1);
    lua_pop(L, 1);
  }
  analysis::ModelArgmaxable r;
  {
    LuaCallScope scope(L);
    try {
      r = analysis::model_argmaxable(model, options, tokens, logp_options(o), argmaxable_progress(),
                                     terminal_progress("argmaxable (observed top-1)"));
    } catch (const UsageError& e) {
      if (!tokens.defined()) throw ArgError(2, e.what());  // the missing option is the second argument's
      throw;
    }
  }
  if (r.method == "lp") {
    push_argmaxable(L, r.exact, options);
  } else {
    lua_createtable(L, 0, 8);
    set_string(L, "method", r.method);
    push_tensor(L, r.argmaxable);
    lua_setfield(L, -2, "argmaxable");
    push_tensor(L, r.top1_counts);
    lua_setfield(L, -2, "top1_counts");
    push_ids_where(L, r.top1_counts.eq(0));
    lua_setfield(L, -2, "unargmaxable");
    set_integer(L, "words", r.top1_counts.numel());
    set_integer(L, "contexts", r.top1_counts.sum().item<std::int64_t>());
  }
  set_string(L, "note", r.note);
  return 1;
}

template <auto Fn>
Function on(const char* name, const char* arguments, const char* summary) {
  return entry<Fn>("lmkit.analysis", name, arguments, summary);
}

const Function kFunctions[] = {
    on<&analysis::svdvals>("svdvals", "Q", "Singular values of a matrix, descending, in its own precision (float64 on request); LAPACK gesdd on CPU, cuSOLVER on GPU — never through QᵀQ."),
    {"press_rank", analysis_press_rank, "lmkit.analysis.press_rank(sv, rows, cols[, eps_dtype=\"float32\"]) -> integer\nNumber of singular values above 0.5·sqrt(rows+cols+1)·σ_max·eps(eps_dtype) (the thesis's rank; float32 eps as the reference computed it)."},
    on<&analysis::estimate_hidden_size>("hidden_size", "sv", "A softmax model's hidden size d from the singular values of its log-probabilities alone (Finlayson et al. 2024): the largest ratio σ_r/σ_{r+1} ends the signal, d = r − 2 (r − 1 without a decoder bias); found = the gap reaches min_gap (a bottleneck's signature; heads that break the bottleneck leave none)."),
    on<&analysis::effective_rank>("effective_rank", "sv, eps", "Smallest k with Σ_{i≤k} σ_i² ≥ (1 − eps)·Σ σ_i²."),
    {"logp_matrix", analysis_logp_matrix, "lmkit.analysis.logp_matrix(model, tokens[, {batch_size=1, bptt=70, max_contexts=nil, dtype=\"float32\", f_logits=false}]) -> Tensor\nlog P(·|c) for every context of the stream, in evaluation order: [contexts, vocab] (PTB test: 82,430 × 10,000). f_logits=true gives the head's transformed logits f(l) instead (heads of the form log_softmax(f(l)))."},
    {"logp_svdvals", analysis_logp_svdvals, "lmkit.analysis.logp_svdvals(model, tokens[, {batch_size=1, bptt=70, max_contexts=nil, dtype=\"float32\", f_logits=false, method=\"auto\", memory_gb=nil, block_rows=2·vocab}]) -> Tensor, rows, cols, method\nSingular values of the logP matrix (descending) and its size. method \"svd\": Q whole in host memory, one values-only SVD (LAPACK ?gesdd in place; the thesis's method); \"streaming_qr\": Q never held, blocks of block_rows rows folded into a QR's R, then the SVD of R; \"auto\" (default): svd when Q fits in memory_gb (default: 60% of the memory available now). The 4th result describes the method that ran, for reports."},
    {"argmaxable", analysis_argmaxable, "lmkit.analysis.argmaxable(weight, bias|nil[, {region=\"box\", bound=1, tolerance=1e-6, rivals=32}]) -> {argmaxable=, margin=, witness=, unargmaxable=, words=, by_scan=, by_lp=, lp_solves=, lp_rows_max=, seconds=, method=\"lp\", region=}\nWhich words of a softmax layer l = W h + b can be the strict top-1 for some h (Demeter et al. 2020; Grivas et al. 2022): exact, by linear programs (GLPK) for the words that a fast scan of candidate h does not certify. region \"box\": h in [−bound, bound]^d (an LSTM's outputs: bound 1); \"free\": any h. argmaxable: bool [N]; margin: float64 [N] (argmaxable: the lead at the witness h; otherwise an upper bound of the best lead, ≤ tolerance); witness: [N, d]; unargmaxable: the 0-based ids of the others."},
    {"model_argmaxable", analysis_model_argmaxable, "lmkit.analysis.model_argmaxable(model[, {region=\"box\", bound=1, tolerance=1e-6, rivals=32, tokens=nil, batch_size=1, bptt=70, max_contexts=nil}]) -> table\nThe argmaxable words of a model's output layer. Heads whose f is strictly increasing (Softmax, SigSoftmax, GSS, LMS-PLIF, ...) rank words as their decoder does: exact, as lmkit.analysis.argmaxable on the decoder (method = \"lp\"). Other heads (MoS, MoC, Lua heads) need tokens: the words that are the top-1 of log P on those contexts (method = \"sampled\", top1_counts, contexts; a lower bound, and 'unargmaxable' lists the words never observed). note says which."},
    {"embedding", analysis_embedding, "lmkit.analysis.embedding(model) -> Tensor\nThe input embedding matrix [vocab, emb] (the decoder's too when tied), detached."},
    {"decoder", analysis_decoder, "lmkit.analysis.decoder(model) -> weight, bias|nil\nThe output layer the head projects onto: weight [vocab, d] (the embedding itself when tied) and bias [vocab] (nil without one), detached: logits l = h·weightᵀ + bias."},
    on<&analysis::normalized_spectrum>("normalized_spectrum", "sv", "σ / σ_max."),
    on<&analysis::cumulative_share>("cumulative_share", "sv", "Σ_{j≤i} σ_j / Σ_j σ_j: the share of Σσ held by the first i singular values (not the MoS paper's Fig. 1: see normalized_cdf)."),
    on<&analysis::normalized_cdf>("normalized_cdf", "sv", "The empirical CDF of the normalized singular values σ/σ₁ (the MoS paper's Fig. 1, \"cumulative percentage of normalized singular values\"): values ascending, fractions[i] = i/n of them ≤ values[i] (float64)."),
    on<&analysis::projection_2d>("projection_2d", "E", "The rows of E, centered, projected on their top two principal directions: [rows, 2] (embedding plots)."),
    on<&analysis::pairwise_kl>("pairwise_kl", "Q", "Expected KL(P(·|c) ‖ P(·|c')) over context pairs c ≠ c' drawn uniformly from the rows of a log-probability matrix (MoS paper, Table 11)."),
    on<&analysis::refactorization_robustness>("refactorization_robustness", "Q", "The thesis's Alg. 5.1: keep the top `keep` singular values of Q, then factorize and reconstruct repeatedly; Press rank and mean squared deviation from the first reconstruction per iteration (Table 5.11)."),
    on<&analysis::noise_robustness>("noise_robustness", "Q, ladder", "The thesis's Alg. 5.2: the rank-`keep` truncation of Q plus Gaussian noise N(0, c/n²) (c/n² the variance: sd √c/n) for each c of the ladder; Press and ε-effective ranks (Tables 5.12, 5.13)."),
    {"rank_report", analysis_rank_report, "lmkit.analysis.rank_report(Q[, eps_dtype=\"float32\"]) -> {press=, tolerance=, sigma_max=, rows=, cols=, effective={{eps=, rank=}, ...}}\nPress rank and the ε-effective ranks for ε = 1e-3, 1e-4, 1e-5."},
};

}  // namespace

void open_analysis(lua_State* L, int module_index) {
  lua_newtable(L);
  set_functions(L, -1, "lmkit.analysis", kFunctions);
  register_doc(L, -1, "lmkit.analysis", "lmkit.analysis — ranks and spectra of log-probability matrices.");
  lua_setfield(L, module_index, "analysis");
}

}  // namespace lmkit::lua
