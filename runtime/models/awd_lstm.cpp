#include "runtime/models/awd_lstm.h"
#include "runtime/models/checked_tokens.h"

#include <array>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>

#include "ops/dropout.h"
#include "runtime/config/bound_options.h"
#include "runtime/core/error.h"
#include "runtime/core/host_memory.h"
#include "runtime/core/number_text.h"
#include "runtime/core/saturating.h"
#include "runtime/models/encoder_registry.h"

namespace lmkit {

namespace {

// The parameters of one LSTM layer: w_ih [4h, in], w_hh [4h, h], b_ih and b_hh [4h].
std::int64_t layer_parameters(std::int64_t in, std::int64_t h) {
  const std::int64_t gates = saturating_multiply_add(4, h, 0);
  return saturating_multiply_add(gates, saturating_multiply_add(in, 1, h), saturating_multiply_add(gates, 2, 0));
}

// Bytes the encoder's parameters take as float32, plus a few KiB of bookkeeping per layer (four
// tensors and their names: what dominates when the layers are tiny and many); saturating.
std::int64_t encoder_bytes(const AwdLstmOptions& o) {
  std::int64_t parameters = saturating_multiply_add(o.vocab_size(), o.emb(), 0);
  if (o.nlayers() == 1) {
    parameters = saturating_multiply_add(layer_parameters(o.emb(), o.nhidlast()), 1, parameters);
  } else {
    parameters = saturating_multiply_add(layer_parameters(o.emb(), o.nhid()), 1, parameters);
    parameters = saturating_multiply_add(layer_parameters(o.nhid(), o.nhid()), o.nlayers() - 2, parameters);
    parameters = saturating_multiply_add(layer_parameters(o.nhid(), o.nhidlast()), 1, parameters);
  }
  return saturating_multiply_add(o.nlayers(), 4096, saturating_multiply_add(parameters, 4, 0));
}

}  // namespace

namespace {

#define LMKIT_ENCODER_OPTION(...) LMKIT_BOUND_ACCESSOR(AwdLstmOptions, __VA_ARGS__)

const config::BoundOptions<AwdLstmOptions>& bound() {
  static const config::BoundOptions<AwdLstmOptions> options(
      "AWD-LSTM",
      {LMKIT_ENCODER_OPTION(vocab_size, Integer, std::int64_t, positive(), "vocabulary size N"),
       LMKIT_ENCODER_OPTION(emb, Integer, std::int64_t, positive(), "embedding size d"),
       LMKIT_ENCODER_OPTION(nhid, Integer, std::int64_t, positive(), "hidden size of the inner LSTM layers"),
       LMKIT_ENCODER_OPTION(nhidlast, Integer, std::int64_t, positive(), "hidden size of the last LSTM layer"),
       LMKIT_ENCODER_OPTION(nlayers, Integer, std::int64_t, positive(), "LSTM layers"),
       LMKIT_ENCODER_OPTION(dropout, Number, double, from_up_to(0, 1), "dropout on the last layer's output"),
       LMKIT_ENCODER_OPTION(dropouth, Number, double, from_up_to(0, 1), "dropout between LSTM layers"),
       LMKIT_ENCODER_OPTION(dropouti, Number, double, from_up_to(0, 1), "dropout on the embedded input"),
       LMKIT_ENCODER_OPTION(dropoute, Number, double, from_up_to(0, 1), "dropout of whole words (embedding rows)"),
       LMKIT_ENCODER_OPTION(wdrop, Number, double, from_up_to(0, 1), "DropConnect on the hidden-to-hidden weights"),
       LMKIT_ENCODER_OPTION(emb_noise, Number, double, any(), "Gaussian noise on the embeddings while training"),
       LMKIT_ENCODER_OPTION(alpha, Number, double, any(), "activation regularization (AR) coefficient"),
       LMKIT_ENCODER_OPTION(beta, Number, double, any(), "temporal activation regularization (TAR) coefficient")});
  return options;
}

#undef LMKIT_ENCODER_OPTION

}  // namespace

const config::BoundOptions<AwdLstmOptions>& declared_options(config::Tag<AwdLstmOptions>) { return bound(); }

EncoderWidths encoder_widths(const AwdLstmOptions& options) {
  return {options.vocab_size(), options.emb(), options.nhidlast()};
}

nlohmann::json AwdLstmImpl::config() const { return to_json(options); }

nlohmann::json to_json(const AwdLstmOptions& options) { return bound().to_json(options); }

AwdLstmImpl::AwdLstmImpl(AwdLstmOptions opts) : options(std::move(opts)) {
  const auto& o = options;
  bound().schema().read(to_json(o));
  // Checked before anything is allocated: huge sizes would overflow 4·nhid, and a huge nlayers
  // would build layer after layer until memory runs out instead of failing at one allocation.
  const auto needed = encoder_bytes(o);
  const auto available = physical_memory_bytes();
  if (needed > available) {
    throw ConfigError("AWD-LSTM sizes (vocab_size " + integer_text(o.vocab_size()) + ", emb " + integer_text(o.emb()) +
                      ", nhid " + integer_text(o.nhid()) + ", nhidlast " + integer_text(o.nhidlast()) + ", nlayers " +
                      integer_text(o.nlayers()) + ") need " +
                      (needed == std::numeric_limits<std::int64_t>::max() ? std::string("over 2^63 bytes") : gibibytes(needed)) +
                      " for the encoder alone, more than this machine's memory (" + gibibytes(available) + ")");
  }
  // host: parameters made in the constructor; .to(device) moves the module with them
  embedding_weight = register_parameter("embedding", torch::empty({o.vocab_size(), o.emb()}));
  for (int64_t l = 0; l < o.nlayers(); ++l) {
    const int64_t in = l == 0 ? o.emb() : layer_size(l - 1);
    const int64_t h = layer_size(l);
    const auto p = "lstm" + integer_text(l) + "_";
    // host: as embedding
    layers.push_back({register_parameter(p + "w_ih", torch::empty({4 * h, in})),
                      register_parameter(p + "w_hh", torch::empty({4 * h, h})),
                      register_parameter(p + "b_ih", torch::empty({4 * h})),
                      register_parameter(p + "b_hh", torch::empty({4 * h}))});
  }
  flatten_layers();
  reset_parameters();
}

namespace {

// The tensors of a layer in cuDNN's order.
std::array<torch::Tensor*, 4> layer_tensors(AwdLstmImpl::Layer& layer) {
  return {&layer.w_ih, &layer.w_hh, &layer.b_ih, &layer.b_hh};
}

std::vector<int64_t> row_major_strides(at::IntArrayRef sizes) {
  std::vector<int64_t> strides(sizes.size(), 1);
  for (int64_t d = static_cast<int64_t>(sizes.size()) - 2; d >= 0; --d) strides[d] = strides[d + 1] * sizes[d + 1];
  return strides;
}

}  // namespace

bool AwdLstmImpl::layer_is_flat(std::size_t l) const {
  auto layer = layers.at(l);
  const auto tensors = layer_tensors(layer);
  const auto& first = *tensors[0];
  int64_t offset = 0;
  for (const auto* t : tensors) {
    if (!t->defined() || !t->is_contiguous() || !t->storage().is_alias_of(first.storage()) ||
        t->storage_offset() != offset || t->scalar_type() != first.scalar_type()) {
      return false;
    }
    offset += t->numel();
  }
  return static_cast<int64_t>(first.storage().nbytes()) == offset * static_cast<int64_t>(first.element_size());
}

void AwdLstmImpl::flatten_layers() {
  torch::NoGradGuard no_grad;
  for (std::size_t l = 0; l < layers.size(); ++l) {
    if (layer_is_flat(l)) continue;
    const auto tensors = layer_tensors(layers[l]);
    int64_t total = 0;
    for (const auto* t : tensors) total += t->numel();
    // host or device: the buffer is made where the layer's tensors already are
    auto flat = torch::empty({total}, tensors[0]->options().requires_grad(false));
    int64_t offset = 0;
    for (auto* t : tensors) {
      const auto n = t->numel();
      flat.narrow(0, offset, n).copy_(t->reshape({-1}));
      // set_ keeps the parameter the same object (optimizers, the module's registry and this
      // struct hold it), now a window of the layer's buffer.
      t->set_(flat.storage(), offset, t->sizes(), row_major_strides(t->sizes()));
      offset += n;
    }
  }
}

void AwdLstmImpl::to(torch::Device device, torch::Dtype dtype, bool non_blocking) {
  torch::nn::Module::to(device, dtype, non_blocking);
  flatten_layers();
}

void AwdLstmImpl::to(torch::Dtype dtype, bool non_blocking) {
  torch::nn::Module::to(dtype, non_blocking);
  flatten_layers();
}

void AwdLstmImpl::to(torch::Device device, bool non_blocking) {
  torch::nn::Module::to(device, non_blocking);
  flatten_layers();
}

int64_t AwdLstmImpl::layer_size(int64_t layer) const {
  return layer == options.nlayers() - 1 ? options.nhidlast() : options.nhid();
}

void AwdLstmImpl::reset_parameters() {
  torch::NoGradGuard no_grad;
  embedding_weight.uniform_(-0.1, 0.1);
  for (std::size_t l = 0; l < layers.size(); ++l) {
    const double bound = 1.0 / std::sqrt(static_cast<double>(layer_size(static_cast<int64_t>(l))));
    for (auto* w : {&layers[l].w_ih, &layers[l].w_hh, &layers[l].b_ih, &layers[l].b_hh}) w->uniform_(-bound, bound);
  }
}

EncoderState AwdLstmImpl::init_hidden(int64_t batch_size) const {
  EncoderState state;
  for (int64_t l = 0; l < options.nlayers(); ++l) {
    auto zeros = torch::zeros({1, batch_size, layer_size(l)}, embedding_weight.options().requires_grad(false));
    state.push_back({zeros, zeros.clone()});
  }
  return state;
}

EncoderOutput AwdLstmImpl::forward(const torch::Tensor& ids, const EncoderState& hidden) {
  if (ids.dim() != 2 || ids.scalar_type() != torch::kInt64) {
    throw UsageError("AWD-LSTM input must be int64 token ids [T, B]");
  }
  if (hidden.size() != layers.size()) {
    throw UsageError("hidden state has " + integer_text(hidden.size()) + " layers, the model " +
                     integer_text(layers.size()) + " (use init_hidden(batch_size))");
  }
  if (!CheckedTokenStream::active()) check_token_ids(ids, embedding_weight.size(0), "the input ids");
  const bool train = is_training();
  auto x = embedding_dropout(embedding_weight, ids, options.dropoute(), train);
  if (train && options.emb_noise() > 0) x = x + torch::randn_like(x) * options.emb_noise();
  x = locked_dropout(x, options.dropouti(), train);
  EncoderOutput result;
  for (std::size_t l = 0; l < layers.size(); ++l) {
    const auto& w = layers[l];
    if (hidden[l].size() != 2) {
      throw UsageError("hidden state of layer " + integer_text(l + 1) + " must be its pair {h, c}, got " +
                       integer_text(hidden[l].size()) + " tensors (use init_hidden(batch_size))");
    }
    const auto& h0 = hidden[l][0];
    const auto& c0 = hidden[l][1];
    if (h0.dim() != 3 || h0.size(1) != ids.size(1)) {
      throw UsageError("hidden state of layer " + integer_text(l + 1) + " does not match batch size " +
                       integer_text(ids.size(1)));
    }
    // DropConnect on the recurrent matrix: one mask for this whole sequence. For cuDNN the dropped
    // matrix goes with the others into one fresh buffer in its order; without DropConnect the
    // layer's own flat buffer serves as it is.
    std::vector<torch::Tensor> weights{w.w_ih, w.w_hh, w.b_ih, w.b_hh};
    if (train && options.wdrop() > 0) {
      const auto dropped = torch::dropout(w.w_hh, options.wdrop(), true);
      weights = x.is_cuda() ? contiguous_layer_weights(w.w_ih, dropped, w.b_ih, w.b_hh)
                            : std::vector<torch::Tensor>{w.w_ih, dropped, w.b_ih, w.b_hh};
    }
    auto out = at::lstm(x, {h0, c0}, weights, /*has_biases=*/true,
                        /*num_layers=*/1, /*dropout=*/0.0, train, /*bidirectional=*/false,
                        /*batch_first=*/false);
    x = std::get<0>(out);
    result.state.push_back({std::get<1>(out), std::get<2>(out)});
    if (l + 1 < layers.size()) x = locked_dropout(x, options.dropouth(), train);
  }
  result.raw = x;
  result.output = locked_dropout(x, options.dropout(), train);
  return result;
}

std::vector<torch::Tensor> contiguous_layer_weights(const torch::Tensor& w_ih, const torch::Tensor& w_hh,
                                                    const torch::Tensor& b_ih, const torch::Tensor& b_hh) {
  const auto flat = torch::cat({w_ih.reshape({-1}), w_hh.reshape({-1}), b_ih.reshape({-1}), b_hh.reshape({-1})});
  // split_with_sizes: views of the buffer whose backward is one cat (narrow's would zero-fill a
  // buffer-sized gradient per view).
  const auto parts = flat.split_with_sizes({w_ih.numel(), w_hh.numel(), b_ih.numel(), b_hh.numel()});
  return {parts[0].view(w_ih.sizes()), parts[1].view(w_hh.sizes()), parts[2].view(b_ih.sizes()),
          parts[3].view(b_hh.sizes())};
}


EncoderRegularizers AwdLstmImpl::regularizers(const EncoderOutput& out) const {
  const auto tar = out.raw.size(0) > 1 ? options.beta() * (out.raw.slice(0, 1) - out.raw.slice(0, 0, -1)).pow(2).mean()
                                       : torch::zeros({}, out.raw.options());
  return {options.alpha() * out.output.pow(2).mean(), tar};
}

std::vector<std::pair<std::string, torch::Tensor>> AwdLstmImpl::reference_entries(bool weight_drop) const {
  std::vector<std::pair<std::string, torch::Tensor>> entries{{"encoder.weight", embedding_weight}};
  for (std::size_t l = 0; l < layers.size(); ++l) {
    const auto& layer = layers[l];
    const auto p = "rnns." + integer_text(static_cast<std::int64_t>(l)) + (weight_drop ? ".module." : ".");
    entries.emplace_back(p + "weight_ih_l0", layer.w_ih);
    entries.emplace_back(p + (weight_drop ? "weight_hh_l0_raw" : "weight_hh_l0"), layer.w_hh);
    entries.emplace_back(p + "bias_ih_l0", layer.b_ih);
    entries.emplace_back(p + "bias_hh_l0", layer.b_hh);
  }
  return entries;
}

}  // namespace lmkit

LMKIT_REGISTER_ENCODER(awd_lstm) {
  return lmkit::declared_encoder_kind<lmkit::AwdLstmImpl, lmkit::AwdLstmOptions>(
      "AWD-LSTM",
      "the thesis's encoder (Merity et al. 2018): nlayers LSTM layers with DropConnect on the recurrent weights, "
      "locked dropouts and AR/TAR; trained with SGD and NT-ASGD (docs/models.md)",
      lmkit::EncoderCapabilities{/*bounded_output=*/true, /*centred_output=*/false, /*separate_windows=*/false},
      {"encoder", "lstm", "nhidlast"}, {{{"emb", 6}, {"nhid", 8}, {"nhidlast", 6}, {"nlayers", 2}}},
      {{{"emb", 16}, {"nhid", 24}, {"nhidlast", 16}, {"nlayers", 2}, {"dropout", 0}, {"dropouth", 0}, {"dropouti", 0},
        {"dropoute", 0}, {"wdrop", 0}},
       5.0});
}
