#include "runtime/data/synthetic_language.h"

#include <cmath>
#include <numeric>

#include "runtime/core/error.h"
#include "runtime/core/number_text.h"
#include "runtime/tensor/tensor_format.h"

namespace lmkit::data {
namespace {

// Standard normals from our own generator (Box–Muller), so parameters do not depend on the Torch
// version's random streams.
torch::Tensor gaussian(std::mt19937_64& engine, std::int64_t rows, std::int64_t cols, double sd) {
  auto t = torch::empty({rows, cols}, torch::kFloat64);
  auto* p = t.data_ptr<double>();
  auto uniform = [&] { return static_cast<double>(engine() >> 11) * 0x1.0p-53; };
  for (std::int64_t i = 0; i < rows * cols; ++i) {
    const double u1 = 1.0 - uniform();
    const double u2 = uniform();
    p[i] = sd * std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * M_PI * u2);
  }
  return t;
}

void check_tokens(const torch::Tensor& tokens, std::int64_t vocab) {
  if (tokens.dim() != 1 || tokens.scalar_type() != torch::kInt64) {
    throw UsageError("expected a 1-D int64 token tensor, got " + std::string(c10::toString(tokens.scalar_type())) +
                     " of size " + format_shape(tokens.sizes()));
  }
  if (tokens.numel() > 0) {
    const auto lo = tokens.min().item<std::int64_t>();
    const auto hi = tokens.max().item<std::int64_t>();
    if (lo < 0 || hi >= vocab) {
      throw UsageError("token ids must be in [0, " + integer_text(vocab) + "), got values in [" +
                       integer_text(lo) + ", " + integer_text(hi) + "]");
    }
  }
}

}  // namespace

SyntheticLanguage::SyntheticLanguage(SyntheticOptions options) : options_(std::move(options)) {
  const auto V = options_.vocab, S = options_.states, d = options_.dim;
  if (V < 2 || V > (std::int64_t{1} << 30)) throw UsageError("vocab must be in [2, 2^30], got " + integer_text(V));
  if (S < 1 || S > 100000) throw UsageError("states must be in [1, 100000], got " + integer_text(S));
  if (d < 1) throw UsageError("dim must be positive, got " + integer_text(d));
  if (options_.kind != "softmax" && options_.kind != "hmm") {
    throw UsageError("unknown synthetic kind '" + options_.kind + "' (known: softmax, hmm)");
  }
  if (!(options_.scale >= 0) || !(options_.transition_scale >= 0)) throw UsageError("scales must be non-negative");

  std::mt19937_64 params(options_.seed);
  const auto H = gaussian(params, S, d, 1.0);
  const auto E = gaussian(params, V, d, options_.scale / std::sqrt(static_cast<double>(d)));
  auto logits = torch::matmul(H, E.t());
  if (options_.bias) logits = logits - torch::log(torch::arange(1, V + 1, torch::kFloat64)).unsqueeze(0);
  emission_ = torch::log_softmax(logits, 1).contiguous();
  const auto P = emission_.exp().contiguous();
  emission_prob_.assign(P.data_ptr<double>(), P.data_ptr<double>() + S * V);
  for (std::int64_t s = 0; s < S; ++s) emit_tables_.push_back(build_alias(emission_prob_.data() + s * V, V));

  if (options_.kind == "hmm") {
    transition_ = torch::softmax(gaussian(params, S, S, options_.transition_scale), 1).contiguous();
    transition_prob_.assign(transition_.data_ptr<double>(), transition_.data_ptr<double>() + S * S);
    for (std::int64_t s = 0; s < S; ++s) move_tables_.push_back(build_alias(transition_prob_.data() + s * S, S));
  } else {
    transition_ = torch::empty({0}, torch::kFloat64);
    next_state_.resize(static_cast<std::size_t>(V));
    for (auto& g : next_state_) g = static_cast<std::int32_t>((static_cast<unsigned __int128>(params()) * S) >> 64);
  }
  stream_.seed(params());  // the sampling stream, apart from the parameters'
}

SyntheticLanguage::AliasTable SyntheticLanguage::build_alias(const double* p, std::int64_t n) {
  // Vose's alias method: every column holds its own share `accept` and the rest from `alias`.
  AliasTable table;
  table.accept.assign(static_cast<std::size_t>(n), 1.0);
  table.alias.resize(static_cast<std::size_t>(n));
  std::iota(table.alias.begin(), table.alias.end(), 0);
  const double total = std::accumulate(p, p + n, 0.0);
  std::vector<double> scaled(static_cast<std::size_t>(n));
  std::vector<std::int32_t> small, large;
  for (std::int64_t i = 0; i < n; ++i) {
    scaled[i] = p[i] * static_cast<double>(n) / total;
    (scaled[i] < 1.0 ? small : large).push_back(static_cast<std::int32_t>(i));
  }
  while (!small.empty() && !large.empty()) {
    const auto s = small.back();
    small.pop_back();
    const auto l = large.back();
    table.accept[s] = scaled[s];
    table.alias[s] = l;
    scaled[l] -= 1.0 - scaled[s];
    if (scaled[l] < 1.0) {
      large.pop_back();
      small.push_back(l);
    }
  }
  return table;  // leftovers (rounding) keep accept = 1
}

std::int32_t SyntheticLanguage::sample(const AliasTable& table, std::mt19937_64& engine) const {
  const auto n = static_cast<unsigned __int128>(table.accept.size());
  const auto column = static_cast<std::int32_t>((engine() * n) >> 64);
  const double coin = static_cast<double>(engine() >> 11) * 0x1.0p-53;
  return coin < table.accept[column] ? column : table.alias[column];
}

void SyntheticLanguage::sample_into(std::int64_t* out, std::int64_t n, std::mt19937_64& engine) const {
  const bool hmm = options_.kind == "hmm";
  std::int32_t state = hmm ? static_cast<std::int32_t>((static_cast<unsigned __int128>(engine()) * options_.states) >> 64) : 0;
  for (std::int64_t t = 0; t < n; ++t) {
    const std::int32_t w = sample(emit_tables_[state], engine);
    out[t] = w;
    state = hmm ? sample(move_tables_[state], engine) : next_state_[w];
  }
}

torch::Tensor SyntheticLanguage::generate(std::int64_t n, std::optional<std::uint64_t> seed) {
  if (n < 0) throw UsageError("token count must be non-negative, got " + integer_text(n));
  if (seed) {
    stream_.seed(*seed);
    stream_seed_ = seed;
    stream_calls_.clear();
  }
  auto tokens = torch::empty({n}, torch::kInt64);
  if (n == 0) return tokens;  // draws nothing (not even the initial state), so nothing to record
  sample_into(tokens.data_ptr<std::int64_t>(), n, stream_);
  stream_calls_.push_back(n);
  return tokens;
}

template <typename Visit>
void SyntheticLanguage::filter(const std::int64_t* tokens, std::int64_t n, Visit&& visit) const {
  const auto S = options_.states, V = options_.vocab;
  std::vector<double> alpha(static_cast<std::size_t>(S), 1.0 / static_cast<double>(S));
  std::vector<double> beta(static_cast<std::size_t>(S));
  for (std::int64_t t = 0; t < n; ++t) {
    visit(t, alpha.data());
    const std::int64_t w = tokens[t];
    double total = 0;
    for (std::int64_t s = 0; s < S; ++s) total += beta[s] = alpha[s] * emission_prob_[s * V + w];
    // Renormalizing every step keeps the belief a distribution (no underflow over long texts).
    std::fill(alpha.begin(), alpha.end(), 0.0);
    for (std::int64_t s = 0; s < S; ++s) {
      const double b = beta[s] / total;
      if (b == 0) continue;
      const double* row = transition_prob_.data() + s * S;
      for (std::int64_t j = 0; j < S; ++j) alpha[j] += b * row[j];
    }
  }
}

torch::Tensor SyntheticLanguage::log_probs(const torch::Tensor& tokens_in) const {
  check_tokens(tokens_in, options_.vocab);
  const auto tokens = tokens_in.contiguous();
  const auto n = tokens.size(0);
  const auto* w = tokens.data_ptr<std::int64_t>();
  const auto S = options_.states;
  if (options_.kind == "softmax") {
    auto states = torch::empty({n}, torch::kInt64);
    auto* s = states.data_ptr<std::int64_t>();
    for (std::int64_t t = 0; t < n; ++t) s[t] = t == 0 ? 0 : next_state_[w[t - 1]];
    return emission_.index_select(0, states);
  }
  auto beliefs = torch::empty({n, S}, torch::kFloat64);
  auto* b = beliefs.data_ptr<double>();
  filter(w, n, [&](std::int64_t t, const double* alpha) { std::copy(alpha, alpha + S, b + t * S); });
  return torch::log(torch::matmul(beliefs, emission_.exp()));
}

torch::Tensor SyntheticLanguage::nll(const torch::Tensor& tokens_in) const {
  check_tokens(tokens_in, options_.vocab);
  const auto tokens = tokens_in.contiguous();
  const auto n = tokens.size(0);
  const auto* w = tokens.data_ptr<std::int64_t>();
  const auto S = options_.states, V = options_.vocab;
  auto out = torch::empty({n}, torch::kFloat64);
  auto* o = out.data_ptr<double>();
  const auto* B = emission_.data_ptr<double>();
  if (options_.kind == "softmax") {
    for (std::int64_t t = 0; t < n; ++t) o[t] = -B[(t == 0 ? 0 : next_state_[w[t - 1]]) * V + w[t]];
    return out;
  }
  filter(w, n, [&](std::int64_t t, const double* alpha) {
    double p = 0;
    for (std::int64_t s = 0; s < S; ++s) p += alpha[s] * emission_prob_[s * V + w[t]];
    o[t] = -std::log(p);
  });
  return out;
}

double SyntheticLanguage::entropy_rate(std::int64_t n, std::uint64_t seed) const {
  if (n <= 0) throw UsageError("entropy_rate needs a positive sample size, got " + integer_text(n));
  std::mt19937_64 engine(seed);
  auto tokens = torch::empty({n}, torch::kInt64);
  sample_into(tokens.data_ptr<std::int64_t>(), n, engine);
  return nll(tokens).mean().item<double>();
}

std::int64_t SyntheticLanguage::expected_rank() const {
  if (options_.kind == "hmm") return -1;
  return std::min({options_.dim + 1 + (options_.bias ? 1 : 0), options_.states, options_.vocab});
}

Corpus SyntheticLanguage::corpus(std::int64_t train, std::int64_t valid, std::int64_t test) {
  Corpus c;
  c.name = "synthetic";
  c.protocol = "synthetic";
  c.source = describe();
  auto vocab = std::make_shared<Vocabulary>();
  for (std::int64_t w = 0; w < options_.vocab; ++w) vocab->add("w" + integer_text(w));
  c.vocab = vocab;
  c.origin = {{"kind", "synthetic"},
              {"options",
               {{"vocab", options_.vocab},
                {"states", options_.states},
                {"dim", options_.dim},
                {"bias", options_.bias},
                {"kind", options_.kind},
                {"scale", options_.scale},
                {"transition_scale", options_.transition_scale},
                {"seed", options_.seed}}},
              {"stream_seed", stream_seed_ ? nlohmann::json(*stream_seed_) : nlohmann::json()},
              {"stream_calls", stream_calls_},
              {"train", train},
              {"valid", valid},
              {"test", test}};
  c.train = generate(train);
  c.valid = generate(valid);
  c.test = generate(test);
  return c;
}

std::string SyntheticLanguage::describe() const {
  return "synthetic " + options_.kind + " language (vocab " + integer_text(options_.vocab) + ", states " +
         integer_text(options_.states) + ", dim " + integer_text(options_.dim) + (options_.bias ? ", bias" : "") +
         ", seed " + integer_text(options_.seed) + ")";
}

const config::BoundOptions<SyntheticOptions>& declared_options(config::Tag<SyntheticOptions>) {
  using O = SyntheticOptions;
  using config::Range;
  static const config::BoundOptions<O> options(
      "synthetic",
      {{"vocab", &O::vocab, Range{2.0, 1073741824.0}, "words"},
       {"states", &O::states, Range{1.0, 100000.0}, "states (the softmax kind: contexts)"},
       {"dim", &O::dim, Range::at_least(1), "the softmax kind's hidden size: Q* has rank dim + 1 (+1 with bias)"},
       {"bias", &O::bias, "logits with a bias"},
       {"kind", &O::kind, config::OneOf{{"softmax", "hmm"}}, "softmax: the state follows from the previous word (low rank); hmm: hidden states (high rank)"},
       {"scale", &O::scale, Range::non_negative(), "standard deviation of the emission logits"},
       {"transition_scale", &O::transition_scale, Range::non_negative(), "hmm: larger is more predictable state changes"},
       {"seed", &O::seed, Range::non_negative(), "the construction's seed"}});
  return options;
}

std::shared_ptr<SyntheticLanguage> make_synthetic_language(const SyntheticOptions& options) {
  return std::make_shared<SyntheticLanguage>(options);
}

double sampled_entropy_rate(const SyntheticLanguage& language, std::optional<std::int64_t> n) {
  return language.entropy_rate(n.value_or(200000));
}

double best_perplexity(const SyntheticLanguage& language, std::optional<std::int64_t> n) {
  return std::exp(sampled_entropy_rate(language, n));
}

std::optional<std::int64_t> known_rank(const SyntheticLanguage& language) {
  const auto rank = language.expected_rank();
  return rank < 0 ? std::nullopt : std::optional<std::int64_t>(rank);
}

const config::BoundOptions<SplitSizes>& declared_options(config::Tag<SplitSizes>) {
  using config::Range;
  static const config::BoundOptions<SplitSizes> options(
      "corpus", {{"train", &SplitSizes::train, Range::at_least(1), "training tokens"},
                 {"valid", &SplitSizes::valid, Range::at_least(1), "validation tokens"},
                 {"test", &SplitSizes::test, Range::at_least(1), "test tokens"}});
  return options;
}

Corpus language_corpus(SyntheticLanguage& language, const SplitSizes& sizes) {
  return language.corpus(sizes.train, sizes.valid, sizes.test);
}

}  // namespace lmkit::data
