// A decoder-only (causal) Transformer encoder, GPT-2's layout (Radford et al. 2019), beside the
// AWD-LSTM: ids [T, B] → h [T, B, emb], the d-dimensional input of any output head.
//   x_0 = dropout(E[ids] + P[positions])          E [N, emb] (the decoder when tied), P learned
//                                                 [context, emb] or sinusoidal (Vaswani et al. 2017)
//   for each of nlayers pre-LayerNorm blocks:
//     x = x + dropout(W_o · attention(LN_1(x)))   H heads of width emb / H, causal
//     x = x + dropout(W_2 · gelu(W_1 · LN_2(x) + b_1) + b_2)   MLP of width ff
//   h = LN_f(x)
//   attention(x) = concat_heads softmax(q kᵀ / √(emb/H) + causal mask) v, [q k v] = W_qkv x + b_qkv,
//   with dropout `attention_dropout` on the attention weights. Torch ≥ 2.0's fused
//   scaled_dot_product_attention computes it where it exists; Torch 1.13 a plain masked softmax.
//
// Parameters: N·emb + context·emb (learned positions) + nlayers·(4·emb² + 2·emb·ff + 9·emb + ff) + 2·emb.
// Init (GPT-2): E, W_qkv, W_1 ~ N(0, 0.02²), P ~ N(0, 0.01²), the residual projections W_o and W_2
// ~ N(0, (0.02/√(2·nlayers))²), biases 0, LayerNorm gains 1.
//
// forward(ids, previous) is one causal pass: a call of T ≤ context tokens attends over its own and
// the last min(P, context − T) tokens of `previous` [P, B] (positions 0 … counted from the oldest
// kept); the next state keeps the last context − 1 tokens. A stream is read with the exact sliding
// context — every position over exactly the `context` tokens up to itself, whatever the windows —
// by sliding_context below, which encode (the Encoder interface) uses. Training windows start
// from an empty state. As an Encoder its state is {{previous tokens}}.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "runtime/config/bound_options.h"
#include "runtime/core/torch.h"
#include "runtime/models/encoder.h"

namespace lmkit {

struct TransformerOptions {
  std::int64_t vocab_size = 10000;
  std::int64_t emb = 256;       // d: the width of the embeddings, the blocks and the output
  std::int64_t nlayers = 4;
  std::int64_t heads = 4;       // must divide emb
  std::int64_t ff = 1024;       // the MLP's hidden width
  std::int64_t context = 128;   // the most tokens one position attends over (itself included)
  std::string positions = "learned";  // or "sinusoidal"
  double dropout = 0.1;               // on the embedded input and on each block's two branches
  double attention_dropout = 0.1;     // on the attention weights
};
const config::BoundOptions<TransformerOptions>& declared_options(config::Tag<TransformerOptions>);
inline const char* encoder_kind_of(config::Tag<TransformerOptions>) { return "transformer"; }
struct EncoderWidths;
EncoderWidths encoder_widths(const TransformerOptions& options);

struct TransformerOutput {
  torch::Tensor output;  // [T, B, emb]
  torch::Tensor state;   // int64 [P', B]: the tokens the next call continues from
};

// Causal multi-head attention of q, k, v [B, H, S, dh] → [B, H, S, dh]: position i attends to
// positions ≤ i. Dropout p on the attention weights while training.
torch::Tensor causal_attention(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v, double p,
                               bool training);

// The sinusoidal positions [length, width]: sin(pos / 10000^(2i/width)) at 2i, cos at 2i + 1.
torch::Tensor sinusoidal_positions(std::int64_t length, std::int64_t width);

class TransformerEncoderImpl : public EncoderImpl {
 public:
  explicit TransformerEncoderImpl(TransformerOptions options);
  // One causal pass. ids: int64 [T, B] (T ≤ context); previous: int64 [P, B] from an earlier call or
  // no_tokens.
  TransformerOutput forward(const torch::Tensor& ids, const torch::Tensor& previous);
  torch::Tensor no_tokens(std::int64_t batch_size) const;  // [0, B]

  std::string kind() const override { return "transformer"; }
  nlohmann::json config() const override;
  // Any number of positions, each over exactly its last `context` tokens (sliding_context).
  EncoderOutput encode(const torch::Tensor& ids, const EncoderState& state) override;
  EncoderState initial_state(std::int64_t batch_size) const override { return {{no_tokens(batch_size)}}; }
  const torch::Tensor& embedding() const override { return embedding_weight; }
  std::int64_t output_width() const override { return options.emb; }
  std::int64_t longest_window() const override { return options.context; }
  // The training protocol lmkit.train gives a Transformer for each option the script leaves unset
  // (`given`: the options it set; JSON keys of train_options.h): AdamW at lr 1e-3 with weight decay
  // 0.1 on matrices, a warm-up of 100 steps then a cosine to lr/10, clipping at 1, fixed windows of
  // `context` tokens, no ASGD switch. SGD at the AWD-LSTM's lr 30 makes a Transformer diverge.
  nlohmann::json training_defaults(const nlohmann::json& given) const override;
  void reset_parameters();
  // The closed form above.
  static std::int64_t parameter_count(const TransformerOptions& options);

  TransformerOptions options;
  torch::Tensor embedding_weight;    // [N, emb]
  torch::Tensor position_embedding;  // [context, emb]: a parameter (learned) or a constant buffer (sinusoidal)
  struct Block {
    torch::nn::LayerNorm attention_norm{nullptr}, mlp_norm{nullptr};
    torch::nn::Linear qkv{nullptr}, attention_out{nullptr}, mlp_in{nullptr}, mlp_out{nullptr};
  };
  std::vector<Block> blocks;
  torch::nn::LayerNorm final_norm{nullptr};
};

TORCH_MODULE(TransformerEncoder);

// A Transformer's reading of a stream: every position of `ids` [T, B] (any T) attends over exactly
// the last `context` tokens up to itself — those of `previous` [P, B] (the stream before) and of
// `ids` — with positions counted from the oldest of them, as reading the stream one token at a time
// would. Positions whose window starts at the stream's first kept token share one causal pass;
// each later one is its own window (up to `context`× the work of one pass: the price of the exact
// sliding context). Returns the outputs [T, B, emb] and the next state: the last context − 1 tokens.
std::pair<torch::Tensor, torch::Tensor> sliding_context(TransformerEncoderImpl& encoder, const torch::Tensor& ids,
                                                        const torch::Tensor& previous);

}  // namespace lmkit
