#include "runtime/heads/mixtape_head.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "ops/dropout.h"
#include "runtime/core/error.h"
#include "runtime/core/number_text.h"
#include "runtime/heads/head_registry.h"

namespace lmkit {

MixtapeHeadImpl::MixtapeHeadImpl(MixtapeHeadOptions o) : options(o) {
  const int64_t K = o.K(), gates = o.K() - 1;
  std::int64_t latent_width = 0, gate_width = 0;
  if (__builtin_mul_overflow(K, o.latent_dim(), &latent_width)) {
    throw ConfigError("mixtape: K · latent_dim = " + integer_text(K) + " · " + integer_text(o.latent_dim()) +
                      " does not fit in 64 bits");
  }
  if (__builtin_mul_overflow(gates, o.gate_dim(), &gate_width)) {
    throw ConfigError("mixtape: (K − 1) · gate_dim = " + integer_text(gates) + " · " + integer_text(o.gate_dim()) +
                      " does not fit in 64 bits");
  }
  latent = register_module("latent", torch::nn::Linear(o.in_dim(), latent_width));
  // host: the tree's constant 0/1 matrices, copied to the gates' device and dtype where used (log_priors)
  left_ = torch::zeros({gates, K});
  right_ = torch::zeros({gates, K});  // host: as left_
  if (gates == 0) return;  // K = 1: one component, no gates
  gate_latent = register_module("gate_latent", torch::nn::Linear(torch::nn::LinearOptions(o.in_dim(), gate_width).bias(false)));
  gate_linear = register_module("gate_linear", torch::nn::Linear(torch::nn::LinearOptions(o.in_dim(), gates).bias(false)));
  // Initialized as nn::Linear's weights are (uniform ±1/√fan_in), biases at 0: every prior starts at
  // the tree's product of σ(0) = ½ along each path, for K a power of two the uniform 1/K.
  const double bound = 1.0 / std::sqrt(static_cast<double>(o.gate_dim()));
  // host: parameters made in the constructor; .to(device) moves the module with them
  gate_vectors = register_parameter("gate_vectors", torch::empty({o.S() + 1, o.gate_dim()}).uniform_(-bound, bound));
  gate_biases = register_parameter("gate_biases", torch::zeros({o.S() + 1, gates}));  // host: as gate_vectors
  for (int64_t k = 0; k < K; ++k) {
    for (int64_t node = K + k; node > 1; node /= 2) {
      const int64_t parent = node / 2;
      (node == 2 * parent ? left_ : right_)[parent - 1][k] = 1.0;
    }
  }
}

nlohmann::json MixtapeHeadImpl::config() const { return declared_head_config(kind(), options); }

torch::Tensor MixtapeHeadImpl::latents(const torch::Tensor& h) {
  // Locked dropout needs the [T, B, ·] layout; the mask is shared across time.
  auto hk = locked_dropout(torch::tanh(latent(h)), options.dropoutl(), is_training());
  return hk.reshape({-1, options.K(), options.latent_dim()});
}

torch::Tensor MixtapeHeadImpl::log_priors(const torch::Tensor& g, const torch::Tensor& gate_rows) {
  const int64_t gates = options.K() - 1, M = g.size(0), rows = gate_rows.numel();
  // a [M, K−1, rows] = q_j · v_row + u_jᵀg + b_row,j with q_j = tanh(U_j g): one GEMM of the
  // [M·(K−1), gate_dim] gate latents with the rows' vectors.
  auto q = torch::tanh(gate_latent(g)).reshape({M * gates, options.gate_dim()});
  auto a = torch::matmul(q, gate_vectors.index_select(0, gate_rows).t()).view({M, gates, rows});
  a = a + gate_linear(g).unsqueeze(2) + gate_biases.index_select(0, gate_rows).t().unsqueeze(0);
  // log π [M, K, rows]: each leaf sums log σ(a_j) (left turns) and log σ(−a_j) (right turns) on its path.
  if (!left_used_.defined() || left_used_.device() != a.device() || left_used_.scalar_type() != a.scalar_type()) {
    left_used_ = left_.t().to(a.options()).contiguous();
    right_used_ = right_.t().to(a.options()).contiguous();
  }
  return torch::matmul(left_used_, torch::log_sigmoid(a)) + torch::matmul(right_used_, torch::log_sigmoid(-a));
}

torch::Tensor MixtapeHeadImpl::gated_logits(const torch::Tensor& h, const Decoder& decoder) {
  const auto g = rows_of(h);
  const auto hk = latents(h);  // [M, K, d]
  const int64_t N = decoder.weight.size(0), K = options.K();
  if (K == 1) return decoder.logits(hk.select(1, 0));
  const int64_t own = std::min(options.S(), N);
  const auto index = torch::TensorOptions().dtype(torch::kInt64).device(g.device());
  std::vector<torch::Tensor> parts;
  if (own > 0) {
    // Words with their own gates: K logits each, mixed by their own priors.
    auto e = decoder.weight.narrow(0, 0, own);
    auto logits = torch::matmul(hk, e.t());                                  // [M, K, own]
    auto pi = log_priors(g, torch::arange(own, index)).exp();                // [M, K, own]
    parts.push_back((logits * pi).sum(1));                                   // [M, own]
  }
  if (own < N) {
    // The rest share one gate row: their priors depend on the context only, so the mixture of their
    // K logits is the logit of the mixed context Σ_k π_k h_k.
    auto pi = log_priors(g, torch::full({1}, options.S(), index)).exp().squeeze(2);  // [M, K]
    auto context = (hk * pi.unsqueeze(2)).sum(1);                                   // [M, d]
    parts.push_back(torch::matmul(context, decoder.weight.narrow(0, own, N - own).t()));
  }
  auto f = parts.size() == 1 ? parts[0] : torch::cat(parts, 1);
  return decoder.bias.defined() ? f + decoder.bias : f;
}

torch::Tensor MixtapeHeadImpl::log_probs(const torch::Tensor& h, const Decoder& decoder) {
  return torch::log_softmax(gated_logits(h, decoder), 1);
}

torch::Tensor MixtapeHeadImpl::nll(const torch::Tensor& h, const torch::Tensor& targets, const Decoder& decoder) {
  auto f = gated_logits(h, decoder);
  return torch::logsumexp(f, 1) - f.gather(1, targets.reshape({-1, 1})).squeeze(1);
}

const config::BoundOptions<MixtapeHeadOptions>& declared_options(config::Tag<MixtapeHeadOptions>) {
  using O = MixtapeHeadOptions;
  static const config::BoundOptions<O> options(
      "mixtape", {LMKIT_BOUND_ACCESSOR(O, K, Integer, int64_t, at_least(1), "the number of components (tree leaves)"),
                  LMKIT_BOUND_ACCESSOR(O, S, Integer, int64_t, non_negative(), "words (ids 0..S−1) with gates of their own; the rest share one"),
                  LMKIT_BOUND_ACCESSOR(O, gate_dim, Integer, int64_t, at_least(1), "the width of tanh(U_j h) in the gates"),
                  LMKIT_BOUND_ACCESSOR(O, dropoutl, Number, double, from_up_to(0, 1), "locked dropout on the latent contexts h_k")});
  return options;
}

LMKIT_REGISTER_HEAD(mixtape) {
  return declared_head_kind<MixtapeHeadImpl, MixtapeHeadOptions>(
      "mixtape",
      "Mixtape: log_softmax(Σ_k π_{x,k}·h_kᵀe_x + b), h_k = tanh(W_k h + c_k), per-word priors π_x from a "
      "sigmoid tree over a_{x,j} = v_xᵀtanh(U_j h) + u_jᵀh + b_{x,j}; the S smallest ids have their own gates, "
      "the other words share one.",
      HeadCapabilities{/*projects=*/true, /*pointwise=*/false, /*monotone=*/false}, {{{"K", 4}, {"S", 7}, {"gate_dim", 5}}});
}

}  // namespace lmkit
