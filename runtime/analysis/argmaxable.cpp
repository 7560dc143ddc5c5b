#include "runtime/analysis/argmaxable.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <utility>
#include <vector>

#include "runtime/analysis/linear_program.h"
#include "runtime/core/error.h"
#include "runtime/core/interruption.h"
#include "runtime/core/number_text.h"
#include "runtime/heads/head_registry.h"

namespace lmkit::analysis {
namespace {

constexpr double kFreeMarginCap = 1.0;  // the free region's LP is unbounded for a hull vertex: t ≤ 1
constexpr std::int64_t kScanBlockRows = 1024;

bool is_real(const torch::Tensor& t) {
  return t.is_floating_point() || torch::isIntegralType(t.scalar_type(), /*includeBool=*/false);
}

torch::Tensor checked_weight(const torch::Tensor& weight) {
  if (!weight.defined() || weight.dim() != 2 || !is_real(weight)) {
    throw UsageError("argmaxable: weight must be a real [N, d] tensor");
  }
  if (weight.size(0) < 2 || weight.size(1) < 1) {
    throw UsageError("argmaxable: weight must have at least 2 words and 1 dimension, got [" +
                     integer_text(weight.size(0)) + ", " + integer_text(weight.size(1)) + "]");
  }
  auto w = weight.detach().to(torch::kCPU, torch::kFloat64).contiguous();
  if (!torch::isfinite(w).all().item<bool>()) throw UsageError("argmaxable: weight has non-finite entries");
  return w;
}

torch::Tensor checked_bias(const torch::Tensor& bias, std::int64_t words) {
  if (!bias.defined()) return torch::zeros({words}, torch::kFloat64);  // host: as checked_weight's copy
  if (bias.dim() != 1 || bias.size(0) != words || !is_real(bias)) {
    throw UsageError("argmaxable: bias must be a real [N] tensor with N = " + integer_text(words));
  }
  auto b = bias.detach().to(torch::kCPU, torch::kFloat64).contiguous();
  if (!torch::isfinite(b).all().item<bool>()) throw UsageError("argmaxable: bias has non-finite entries");
  return b;
}

void check_options(const ArgmaxableOptions& o) {
  if (o.region == HiddenRegion::kBox && !(o.bound > 0.0 && std::isfinite(o.bound))) {
    throw UsageError("argmaxable: bound must be positive and finite, got " + describe_number(o.bound));
  }
  if (!(o.tolerance >= 0.0 && std::isfinite(o.tolerance))) {
    throw UsageError("argmaxable: tolerance must be ≥ 0, got " + describe_number(o.tolerance));
  }
  if (o.rivals < 1) throw UsageError("argmaxable: rivals must be ≥ 1, got " + integer_text(o.rivals));
}

// One candidate h per word (rows of the result): the corner of the box in the direction w_i − w̄,
// or in the free region w_i − w̄ scaled so that the projections outweigh the biases.
torch::Tensor scan_candidates(const torch::Tensor& w, const torch::Tensor& b, const ArgmaxableOptions& o) {
  auto u = w - w.mean(0, /*keepdim=*/true);
  if (o.region == HiddenRegion::kBox) return o.bound * u.sign();
  const double bias_range = (b.max() - b.min()).item<double>();
  const double spread = u.norm(2, 1).max().item<double>();
  const double scale = 10.0 * (1.0 + bias_range) / std::max(spread * spread, 1e-300);
  return u * scale;
}

struct Word {
  bool argmaxable = false;
  double margin = -std::numeric_limits<double>::infinity();
};

// The lead of word i at h: l_i − max_{j≠i} l_j, with l = W h + b.
double lead_at(const torch::Tensor& logits, std::int64_t i) {
  auto others = logits.clone();
  others[i] = -std::numeric_limits<double>::infinity();
  return logits[i].item<double>() - others.max().item<double>();
}

}  // namespace

std::string hidden_region_name(HiddenRegion region) { return region == HiddenRegion::kBox ? "box" : "free"; }

HiddenRegion parse_hidden_region(const std::string& name) {
  if (name == "box") return HiddenRegion::kBox;
  if (name == "free") return HiddenRegion::kFree;
  throw UsageError("unknown region '" + name + "' (known: box — h in [−bound, bound]^d, as an LSTM or tanh gives; "
                   "free — any h)");
}

ArgmaxableResult argmaxable_words(const torch::Tensor& weight, const std::optional<torch::Tensor>& bias,
                                  const ArgmaxableOptions& o, const ArgmaxableProgress& progress) {
  const auto start = std::chrono::steady_clock::now();
  check_options(o);
  torch::NoGradGuard no_grad;
  const auto w = checked_weight(weight);
  const auto b = checked_bias(bias ? *bias : torch::Tensor(), w.size(0));
  const std::int64_t n = w.size(0), d = w.size(1);
  const std::int64_t rivals = std::min(o.rivals, n - 1);
  std::vector<Word> words(n);
  // host: the search runs beside w and b, CPU float64 copies of the model's (checked_weight), and GLPK
  auto witness = torch::zeros({n, d}, torch::kFloat64);
  auto first_rivals = torch::empty({n, rivals}, torch::kInt64);  // host: as witness
  InterruptibleScope interruptible;
  ArgmaxableResult result;

  // 1. The scan: each candidate's top-1 word, certified when it leads by more than the tolerance.
  const auto candidates = scan_candidates(w, b, o);
  for (std::int64_t first = 0; first < n; first += kScanBlockRows) {
    interruptible.poll("argmaxable");
    const std::int64_t rows = std::min(kScanBlockRows, n - first);
    const auto h = candidates.narrow(0, first, rows);
    auto logits = torch::addmm(b, h, w.t());  // [rows, N]
    auto top = std::get<0>(logits.topk(2, 1));
    auto winner = logits.argmax(1);
    auto lead = top.select(1, 0) - top.select(1, 1);
    // The first LP of word first + r starts from the words that beat it most at its candidate.
    // host: logits are on the CPU (w, b)
    logits.scatter_(1, torch::arange(first, first + rows, torch::kInt64).unsqueeze(1),
                    -std::numeric_limits<double>::infinity());
    first_rivals.narrow(0, first, rows).copy_(std::get<1>(logits.topk(rivals, 1)));
    const auto* winner_data = winner.data_ptr<std::int64_t>();
    const auto* lead_data = lead.data_ptr<double>();
    for (std::int64_t r = 0; r < rows; ++r) {
      const std::int64_t j = winner_data[r];
      if (lead_data[r] > o.tolerance && lead_data[r] > words[j].margin) {
        words[j].argmaxable = true;
        words[j].margin = o.region == HiddenRegion::kFree ? std::min(lead_data[r], kFreeMarginCap) : lead_data[r];
        witness[j].copy_(h[r]);
      }
    }
  }
  for (const auto& word : words) result.by_scan += word.argmaxable ? 1 : 0;

  // 2. Cutting planes for the words the scan left.
  const std::int64_t left = n - result.by_scan;
  const auto* wd = w.data_ptr<double>();
  const auto* bd = b.data_ptr<double>();
  for (std::int64_t i = 0; i < n; ++i) {
    if (words[i].argmaxable) continue;  // certified by the scan
    interruptible.poll("argmaxable");
    LinearProgram lp(static_cast<int>(d + 1));
    for (std::int64_t k = 0; k < d; ++k) {
      if (o.region == HiddenRegion::kBox) lp.set_bounds(static_cast<int>(k), -o.bound, o.bound);
    }
    const double inf = std::numeric_limits<double>::infinity();
    lp.set_bounds(static_cast<int>(d), -inf, o.region == HiddenRegion::kFree ? kFreeMarginCap : inf);
    lp.set_objective(static_cast<int>(d), 1.0);
    std::vector<char> in_lp(n, 0);
    std::vector<double> row(d + 1, 1.0);
    auto add_rival = [&](std::int64_t j) {
      for (std::int64_t k = 0; k < d; ++k) row[k] = wd[j * d + k] - wd[i * d + k];
      row[d] = 1.0;
      lp.add_row(row, bd[i] - bd[j]);
      in_lp[j] = 1;
    };
    const auto* first = first_rivals[i].data_ptr<std::int64_t>();
    for (std::int64_t r = 0; r < rivals; ++r) add_rival(first[r]);
    while (true) {
      ++result.lp_solves;
      if (lp.solve() != LinearProgram::Status::kOptimal) {
        throw std::logic_error("argmaxable: the LP of word " + integer_text(i) + " has no optimum (it always should)");
      }
      const double t = lp.objective();
      if (t <= o.tolerance) {
        words[i].margin = t;
        break;
      }
      const auto x = lp.solution();
      // host: the LP's solution, beside w and b on the CPU
      const auto h = torch::from_blob(const_cast<double*>(x.data()), {d}, torch::kFloat64).clone();
      const auto logits = torch::addmv(b, w, h);
      const double lead = lead_at(logits, i);
      if (lead > o.tolerance) {
        words[i].argmaxable = true;
        words[i].margin = lead;
        witness[i].copy_(h);
        break;
      }
      // The rivals that beat i by more than the LP allowed at this h: the most violated rows first.
      const auto* l = logits.data_ptr<double>();
      std::vector<std::pair<double, std::int64_t>> violated;
      for (std::int64_t j = 0; j < n; ++j) {
        if (j == i || in_lp[j]) continue;
        const double violation = l[j] - l[i] + t;
        if (violation > 1e-12 * (1.0 + std::abs(l[i]))) violated.emplace_back(violation, j);
      }
      if (violated.empty()) {
        // The LP's h satisfies every row: t is the full LP's optimum, and the lead at h is t (up to rounding).
        words[i].argmaxable = std::min(t, lead) > o.tolerance;
        words[i].margin = std::min(t, lead);
        break;
      }
      const auto take = std::min<std::size_t>(violated.size(), static_cast<std::size_t>(rivals));
      std::partial_sort(violated.begin(), violated.begin() + static_cast<std::ptrdiff_t>(take), violated.end(),
                        [](const auto& a, const auto& c) { return a.first > c.first; });
      for (std::size_t k = 0; k < take; ++k) add_rival(violated[k].second);
    }
    result.lp_rows_max = std::max<std::int64_t>(result.lp_rows_max, lp.rows());
    ++result.by_lp;
    if (progress) progress(result.by_lp, left);
  }

  // host: results filled through data_ptr below
  result.argmaxable = torch::empty({n}, torch::kBool);
  result.margin = torch::empty({n}, torch::kFloat64);  // host: as argmaxable
  auto* a = result.argmaxable.data_ptr<bool>();
  auto* m = result.margin.data_ptr<double>();
  for (std::int64_t i = 0; i < n; ++i) {
    a[i] = words[i].argmaxable;
    m[i] = words[i].margin;
  }
  result.witness = witness;
  result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  result.region = hidden_region_name(o.region);
  result.words = result.argmaxable.numel();
  const auto ids = result.argmaxable.logical_not().nonzero().flatten().to(torch::kInt64).contiguous();
  result.unargmaxable.assign(ids.data_ptr<std::int64_t>(), ids.data_ptr<std::int64_t>() + ids.numel());
  return result;
}

const config::BoundOptions<ArgmaxableOptions>& declared_options(config::Tag<ArgmaxableOptions>) {
  using O = ArgmaxableOptions;
  using config::Range;
  static const config::BoundOptions<O> options(
      "argmaxable",
      {{config::OptionSpec("region", config::OptionType::String, "box", Range::any(),
                           "box: h in [−bound, bound]^d (an LSTM's outputs: bound 1); free: any h")
            .one_of({"box", "free"}),
        [](const O& o) -> nlohmann::json { return hidden_region_name(o.region); },
        [](O& o, const nlohmann::json& v) { o.region = parse_hidden_region(v.get<std::string>()); }},
       {"bound", &O::bound, Range::positive(), "the box's half-width"},
       {"tolerance", &O::tolerance, Range::non_negative(), "a best lead at or below it counts as unargmaxable"},
       {"rivals", &O::rivals, Range::at_least(1), "rows in a word's first linear program, and added per round"}});
  return options;
}

const config::BoundOptions<ModelArgmaxableOptions>& declared_options(config::Tag<ModelArgmaxableOptions>) {
  using O = ModelArgmaxableOptions;
  static const config::BoundOptions<O> options("model_argmaxable", [] {
    auto list = config::lifted(&O::exact);
    list.push_back({"tokens", &O::tokens, "token ids (e.g. corpus.test) that heads other than the monotone ones are observed on"});
    for (auto& option : config::lifted(&O::sampling)) {
      if (option.spec.name != "dtype" && option.spec.name != "f_logits") list.push_back(std::move(option));
    }
    return list;
  }());
  return options;
}

ModelArgmaxableTable model_argmaxable_table(LanguageModel& model, const ModelArgmaxableOptions& options,
                                            const ArgmaxableProgress& exact_progress,
                                            const MatrixProgress& sampled_progress) {
  const auto r = model_argmaxable(model, options.exact, options.tokens, options.sampling, exact_progress, sampled_progress);
  ModelArgmaxableTable table;
  table.method = r.method;
  table.note = r.note;
  table.argmaxable = r.argmaxable;
  if (r.method == "lp") {
    table.region = r.exact.region;
    table.margin = r.exact.margin;
    table.witness = r.exact.witness;
    table.unargmaxable = r.exact.unargmaxable;
    table.words = r.exact.words;
    table.by_scan = r.exact.by_scan;
    table.by_lp = r.exact.by_lp;
    table.lp_solves = r.exact.lp_solves;
    table.lp_rows_max = r.exact.lp_rows_max;
    table.seconds = r.exact.seconds;
  } else {
    table.top1_counts = r.top1_counts;
    table.words = r.top1_counts.numel();
    table.contexts = r.top1_counts.sum().item<std::int64_t>();
    const auto ids = r.top1_counts.eq(0).nonzero().flatten().to(torch::kInt64).contiguous();
    table.unargmaxable.assign(ids.data_ptr<std::int64_t>(), ids.data_ptr<std::int64_t>() + ids.numel());
  }
  return table;
}

torch::Tensor observed_top1(LanguageModel& model, const torch::Tensor& tokens, const LogpMatrixOptions& options,
                            const MatrixProgress& progress) {
  // host: counted on the CPU, each block's argmax copied there (a vocab-sized result, not a matrix)
  auto counts = torch::zeros({model->vocab_size()}, torch::kInt64);
  for_each_logp_block(model, tokens, options, progress, [&](const torch::Tensor& block, std::int64_t) {
    counts.index_add_(0, block.argmax(1).to(torch::kCPU), torch::ones({block.size(0)}, torch::kInt64));  // host: as counts
  });
  return counts;
}

ModelArgmaxable model_argmaxable(LanguageModel& model, const ArgmaxableOptions& options, const torch::Tensor& tokens,
                                 const LogpMatrixOptions& sampling, const ArgmaxableProgress& exact_progress,
                                 const MatrixProgress& sampled_progress) {
  ModelArgmaxable out;
  const auto kind = model->head->kind();
  const auto* registered = find_head_kind(kind);
  if (registered && registered->capabilities.monotone) {
    if (!model->encoder->capabilities().bounded_output && options.region == HiddenRegion::kBox) {
      // The box is the image of an LSTM's tanh; another encoder's h (a Transformer's LayerNorm output,
      // whose coordinates reach γ_i·√(d − 1) + β_i) would count words the model cannot be shown to miss.
      throw UsageError("the " + model->encoder_title() + "'s h is not confined to the box [−bound, bound]^d of an "
                       "LSTM's tanh: use region = \"free\" (any h in ℝ^d)");
    }
    const auto decoder = model->decoder();
    out.method = "lp";
    out.exact = argmaxable_words(decoder.weight, decoder.bias, options, exact_progress);
    out.argmaxable = out.exact.argmaxable;
    out.note = "the " + kind + " head's f is strictly increasing: its argmaxable words are its decoder's, decided "
               "exactly by linear programs";
    return out;
  }
  if (!tokens.defined()) {
    throw UsageError("the " + kind + " head is not a monotone function of one logit matrix (exact for: " +
                     head_kinds_with(&HeadCapabilities::monotone) +
                     "), so its argmaxable words are observed on contexts: pass tokens = corpus.test");
  }
  out.method = "sampled";
  out.top1_counts = observed_top1(model, tokens, sampling, sampled_progress);
  out.argmaxable = out.top1_counts.gt(0);
  out.note = "the " + kind + " head has no single logit matrix: words never the top-1 on the contexts sampled (a "
             "lower bound of the argmaxable set; 'unargmaxable' lists the words not observed)";
  return out;
}

}  // namespace lmkit::analysis
