#include "runtime/models/transformer_encoder.h"

#include <torch/version.h>

#include <cmath>
#include <limits>

#include "runtime/core/error.h"
#include "runtime/core/host_memory.h"
#include "runtime/core/number_text.h"
#include "runtime/core/saturating.h"
#include "runtime/models/checked_tokens.h"
#include "runtime/models/encoder_registry.h"

namespace lmkit {

const config::BoundOptions<TransformerOptions>& declared_options(config::Tag<TransformerOptions>) {
  using O = TransformerOptions;
  using config::Range;
  static const config::BoundOptions<O> options(
      "Transformer",
      {{"vocab_size", &O::vocab_size, Range::positive(), "vocabulary size N"},
       {"emb", &O::emb, Range::positive(), "width d of the embeddings, the blocks and the output"},
       {"nlayers", &O::nlayers, Range::positive(), "Transformer blocks"},
       {"heads", &O::heads, Range::positive(), "attention heads (they divide emb)"},
       {"ff", &O::ff, Range::positive(), "hidden width of each block's MLP"},
       {"context", &O::context, Range::positive(), "the most tokens a position attends over, itself included"},
       {"positions", &O::positions, config::OneOf{{"learned", "sinusoidal"}}, "position embeddings"},
       {"dropout", &O::dropout, Range::from_up_to(0, 1), "dropout on the embedded input and each block's two branches"},
       {"attention_dropout", &O::attention_dropout, Range::from_up_to(0, 1), "dropout on the attention weights"}});
  return options;
}

namespace {

void check(const TransformerOptions& o) {
  declared_options(config::Tag<TransformerOptions>{}).schema().read(declared_options(config::Tag<TransformerOptions>{}).to_json(o));
  if (o.emb % o.heads != 0) {
    throw ConfigError("Transformer option 'heads' must divide emb: " + integer_text(o.emb) + " is not a multiple of " +
                      integer_text(o.heads) + " (e.g. heads = " + integer_text(o.emb % 4 == 0 ? 4 : 1) + ")");
  }
  // Checked before anything is allocated, as the AWD-LSTM's sizes are.
  const auto parameters = TransformerEncoderImpl::parameter_count(o);
  const auto needed = saturating_multiply_add(parameters, 4, 0);
  const auto available = physical_memory_bytes();
  if (needed > available) {
    throw ConfigError("Transformer sizes (vocab_size " + integer_text(o.vocab_size) + ", emb " + integer_text(o.emb) + ", ff " +
                      integer_text(o.ff) + ", nlayers " + integer_text(o.nlayers) + ", context " + integer_text(o.context) +
                      ") need " +
                      (needed == std::numeric_limits<std::int64_t>::max() ? std::string("over 2^63 bytes") : gibibytes(needed)) +
                      " for the encoder alone, more than this machine's memory (" + gibibytes(available) + ")");
  }
}

}  // namespace

EncoderWidths encoder_widths(const TransformerOptions& options) { return {options.vocab_size, options.emb, options.emb}; }

nlohmann::json TransformerEncoderImpl::config() const {
  return declared_options(config::Tag<TransformerOptions>{}).to_json(options);
}

std::int64_t TransformerEncoderImpl::parameter_count(const TransformerOptions& o) {
  const auto d = o.emb;
  std::int64_t total = saturating_multiply_add(o.vocab_size, d, 0);
  if (o.positions == "learned") total = saturating_multiply_add(o.context, d, total);
  std::int64_t block = saturating_multiply_add(saturating_multiply_add(4, d, 0), d, 0);
  block = saturating_multiply_add(saturating_multiply_add(2, d, 0), o.ff, block);
  block = saturating_multiply_add(9, d, saturating_multiply_add(o.ff, 1, block));
  total = saturating_multiply_add(o.nlayers, block, total);
  return saturating_multiply_add(2, d, total);
}

torch::Tensor causal_attention(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v, double p,
                               bool training) {
#if TORCH_VERSION_MAJOR >= 2
  return at::scaled_dot_product_attention(q, k, v, /*attn_mask=*/{}, training ? p : 0.0, /*is_causal=*/true);
#else
  const auto length = q.size(-2);
  auto scores = torch::matmul(q, k.transpose(-2, -1)) / std::sqrt(static_cast<double>(q.size(-1)));
  const auto future = torch::ones({length, k.size(-2)}, q.options().dtype(torch::kBool)).triu(1);
  auto weights = torch::softmax(scores.masked_fill(future, -std::numeric_limits<double>::infinity()), -1);
  weights = torch::dropout(weights, p, training);
  return torch::matmul(weights, v);
#endif
}

torch::Tensor sinusoidal_positions(std::int64_t length, std::int64_t width) {
  // A table of constants, registered as a buffer: .to(device) moves it with the module.
  auto positions = torch::arange(length, torch::kFloat64).unsqueeze(1);  // host: the buffer's table
  auto even = torch::arange(0, width, 2, torch::kFloat64);               // host: the buffer's table
  auto angles = positions / torch::pow(10000.0, even / static_cast<double>(width));
  auto table = torch::zeros({length, width}, torch::kFloat64);  // host: the buffer's table
  table.slice(1, 0, width, 2) = torch::sin(angles);
  table.slice(1, 1, width, 2) = torch::cos(angles.slice(1, 0, width / 2));
  return table;
}

TransformerEncoderImpl::TransformerEncoderImpl(TransformerOptions opts) : options(std::move(opts)) {
  check(options);
  const auto& o = options;
  // host: parameters made in the constructor; .to(device) moves the module with them
  embedding_weight = register_parameter("embedding", torch::empty({o.vocab_size, o.emb}));
  if (o.positions == "learned") {
    position_embedding = register_parameter("positions", torch::empty({o.context, o.emb}));  // host: as embedding
  } else {
    position_embedding = register_buffer("positions", sinusoidal_positions(o.context, o.emb).to(torch::kFloat32));
  }
  for (std::int64_t l = 0; l < o.nlayers; ++l) {
    const auto p = "block" + integer_text(l) + "_";
    Block b;
    b.attention_norm = register_module(p + "attention_norm", torch::nn::LayerNorm(torch::nn::LayerNormOptions({o.emb})));
    b.qkv = register_module(p + "qkv", torch::nn::Linear(o.emb, 3 * o.emb));
    b.attention_out = register_module(p + "attention_out", torch::nn::Linear(o.emb, o.emb));
    b.mlp_norm = register_module(p + "mlp_norm", torch::nn::LayerNorm(torch::nn::LayerNormOptions({o.emb})));
    b.mlp_in = register_module(p + "mlp_in", torch::nn::Linear(o.emb, o.ff));
    b.mlp_out = register_module(p + "mlp_out", torch::nn::Linear(o.ff, o.emb));
    blocks.push_back(b);
  }
  final_norm = register_module("final_norm", torch::nn::LayerNorm(torch::nn::LayerNormOptions({o.emb})));
  reset_parameters();
}

void TransformerEncoderImpl::reset_parameters() {
  torch::NoGradGuard no_grad;
  embedding_weight.normal_(0, 0.02);
  if (options.positions == "learned") position_embedding.normal_(0, 0.01);
  const double residual_sd = 0.02 / std::sqrt(2.0 * static_cast<double>(options.nlayers));
  for (auto& b : blocks) {
    for (auto* norm : {&b.attention_norm, &b.mlp_norm}) {
      (*norm)->weight.fill_(1);
      (*norm)->bias.zero_();
    }
    b.qkv->weight.normal_(0, 0.02);
    b.mlp_in->weight.normal_(0, 0.02);
    b.attention_out->weight.normal_(0, residual_sd);
    b.mlp_out->weight.normal_(0, residual_sd);
    for (auto* linear : {&b.qkv, &b.attention_out, &b.mlp_in, &b.mlp_out}) (*linear)->bias.zero_();
  }
  final_norm->weight.fill_(1);
  final_norm->bias.zero_();
}

nlohmann::json TransformerEncoderImpl::training_defaults(const nlohmann::json& given) const {
  constexpr double kLr = 1e-3;
  const double lr = given.contains("lr") && given.at("lr").is_number() ? given.at("lr").get<double>() : kLr;
  return {{"optimizer", "adamw"}, {"lr", kLr},        {"wdecay", 0.1},    {"clip", 1.0},
          {"windows", "fixed"},   {"bptt", options.context}, {"schedule", "cosine"}, {"warmup", 100},
          {"min_lr", lr / 10},    {"switch", "none"}};
}

torch::Tensor TransformerEncoderImpl::no_tokens(std::int64_t batch_size) const {
  return torch::zeros({0, batch_size}, embedding_weight.options().dtype(torch::kInt64).requires_grad(false));
}

TransformerOutput TransformerEncoderImpl::forward(const torch::Tensor& ids, const torch::Tensor& previous) {
  if (ids.dim() != 2 || ids.scalar_type() != torch::kInt64) throw UsageError("Transformer input must be int64 token ids [T, B]");
  const auto T = ids.size(0), B = ids.size(1);
  if (T > options.context) {
    throw UsageError("Transformer input has " + integer_text(T) + " positions, more than its context of " +
                     integer_text(options.context) + " (read the stream in windows of at most context tokens)");
  }
  if (previous.dim() != 2 || previous.size(1) != B || previous.scalar_type() != torch::kInt64) {
    throw UsageError("Transformer state must be the int64 previous tokens [P, " + integer_text(B) +
                     "] (use init_hidden(batch_size))");
  }
  if (!CheckedTokenStream::active()) check_token_ids(ids, options.vocab_size, "the input ids");
  const auto kept = std::min<std::int64_t>(previous.size(0), options.context - T);
  const auto tokens = torch::cat({previous.slice(0, previous.size(0) - kept).to(ids.device()), ids}, 0);  // [S, B]
  const auto S = tokens.size(0);
  const bool train = is_training();
  auto x = torch::embedding(embedding_weight, tokens.t()) + position_embedding.slice(0, 0, S).unsqueeze(0);  // [B, S, emb]
  x = torch::dropout(x, options.dropout, train);
  const auto H = options.heads, dh = options.emb / options.heads;
  for (auto& b : blocks) {
    auto qkv = b.qkv(b.attention_norm(x)).view({B, S, 3, H, dh}).permute({2, 0, 3, 1, 4});  // [3, B, H, S, dh]
    auto heads = causal_attention(qkv[0], qkv[1], qkv[2], options.attention_dropout, train);
    auto attended = heads.transpose(1, 2).reshape({B, S, options.emb});
    x = x + torch::dropout(b.attention_out(attended), options.dropout, train);
    auto hidden = torch::gelu(b.mlp_in(b.mlp_norm(x)));
    x = x + torch::dropout(b.mlp_out(hidden), options.dropout, train);
  }
  x = final_norm(x);
  TransformerOutput out;
  out.output = x.slice(1, S - T).transpose(0, 1).contiguous();  // [T, B, emb]
  out.state = tokens.slice(0, std::max<std::int64_t>(0, S - (options.context - 1))).detach();
  return out;
}

namespace {

// Token positions one forward pass of the per-position windows below may hold (bounds the memory of
// reading a long window exactly: 2^16 positions of d floats per activation).
constexpr std::int64_t kSlidingPositionsPerPass = std::int64_t{1} << 16;

}  // namespace

std::pair<torch::Tensor, torch::Tensor> sliding_context(TransformerEncoderImpl& encoder, const torch::Tensor& ids,
                                                        const torch::Tensor& previous) {
  if (ids.dim() != 2 || ids.scalar_type() != torch::kInt64) throw UsageError("Transformer input must be int64 token ids [T, B]");
  if (previous.dim() != 2 || previous.size(1) != ids.size(1) || previous.scalar_type() != torch::kInt64) {
    throw UsageError("Transformer state must be the int64 previous tokens [P, " + integer_text(ids.size(1)) +
                     "] (use init_hidden(batch_size))");
  }
  const auto context = encoder.options.context;
  const auto T = ids.size(0), B = ids.size(1);
  const auto kept = std::min<std::int64_t>(previous.size(0), context - 1);
  const auto tokens = torch::cat({previous.slice(0, previous.size(0) - kept).to(ids.device()), ids}, 0);  // [S, B]
  const auto S = kept + T;
  const auto next_state = tokens.slice(0, std::max<std::int64_t>(0, S - (context - 1))).detach();
  std::vector<torch::Tensor> outputs;
  // Stream positions j < context (of tokens) see every token from 0: one causal pass.
  const auto first_end = std::min(S, context);
  if (first_end > kept || T == 0) {
    outputs.push_back(encoder.forward(tokens.slice(0, kept, first_end), tokens.slice(0, 0, kept)).output);
  }
  // Each later position j sees exactly tokens j − context + 1 … j, its own window from position 0:
  // the windows ending at j = first_end … S − 1 side by side in the batch, as many per pass as the
  // memory bound allows; the last position of each is j's output.
  if (S > first_end) {
    const auto windows = tokens.unfold(0, context, 1);  // [S − context + 1, B, context]: window w = tokens w … w + c − 1
    const auto per_pass = std::max<std::int64_t>(1, kSlidingPositionsPerPass / (B * context));
    for (std::int64_t end = first_end; end < S; end += per_pass) {
      const auto last = std::min(S, end + per_pass);
      const auto n = last - end;
      auto batch = windows.slice(0, end - context + 1, last - context + 1)  // [n, B, c]
                       .permute({2, 0, 1})
                       .reshape({context, n * B});
      auto out = encoder.forward(batch, encoder.no_tokens(n * B)).output;  // [c, n·B, emb]
      outputs.push_back(out.select(0, context - 1).reshape({n, B, out.size(2)}));
    }
  }
  return {outputs.size() == 1 ? outputs.front() : torch::cat(outputs, 0), next_state};
}

EncoderOutput TransformerEncoderImpl::encode(const torch::Tensor& ids, const EncoderState& state) {
  if (state.size() != 1 || state.front().size() != 1) {
    const auto tensors = state.size() == 1 ? state.front().size() : state.size();
    throw UsageError("a Transformer's state is {{previous tokens}}: one part of one tensor, got " +
                     integer_text(static_cast<std::int64_t>(tensors)) + (state.size() == 1 ? " tensors" : " parts") +
                     " (use init_hidden(batch_size))");
  }
  auto [output, next] = sliding_context(*this, ids, state.front().front());
  return {output, output, {{next}}};
}

}  // namespace lmkit

// Its output ends in a LayerNorm: h = γ⊙n + β with n centred (1ᵀn = 0), so the rows of H span a
// (d − 1)-dimensional subspace plus the constant β, which merges with a decoder bias.
LMKIT_REGISTER_ENCODER(transformer) {
  return lmkit::declared_encoder_kind<lmkit::TransformerEncoderImpl, lmkit::TransformerOptions>(
      "Transformer",
      "a causal pre-LayerNorm Transformer (GPT-2's layout) reading each position over its last `context` tokens; "
      "trained with AdamW, a warm-up and a cosine decay (docs/models.md)",
      lmkit::EncoderCapabilities{/*bounded_output=*/false, /*centred_output=*/true, /*separate_windows=*/true},
      {"transformer", "transformer", "emb"},
      {{{"emb", 8}, {"nlayers", 1}, {"heads", 2}, {"ff", 12}, {"context", 6}, {"dropout", 0.1}}},
      {{{"emb", 16}, {"nlayers", 2}, {"heads", 2}, {"ff", 32}, {"context", 12}, {"dropout", 0}, {"attention_dropout", 0}}, 0.5},
      // Written into Transformer configs before AR/TAR became the AWD-LSTM's options.
      {{"alpha", 0.0}, {"beta", 0.0}});
}
