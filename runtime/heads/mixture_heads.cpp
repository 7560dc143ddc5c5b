// MoS, MoSS and MoC: the heads that mix K latent contexts (one shared implementation of the
// latents and priors; they differ in where the mixture is taken).
#include <cmath>

#include "ops/mixture_nll.h"
#include "runtime/core/error.h"
#include "runtime/core/number_text.h"
#include "runtime/heads/head_registry.h"
#include "runtime/heads/moc_head.h"
#include "runtime/heads/mos_head.h"
#include "runtime/heads/moss_head.h"
#include "ops/dropout.h"

namespace lmkit {

MosHeadImpl::MosHeadImpl(MosHeadOptions o) : options(o) {
  // The K latent contexts share one Linear of K·latent_dim outputs: a product that can overflow.
  std::int64_t latent_width = 0;
  if (__builtin_mul_overflow(o.K(), o.latent_dim(), &latent_width)) {
    throw ConfigError("mos: K · latent_dim = " + integer_text(o.K()) + " · " + integer_text(o.latent_dim()) +
                      " does not fit in 64 bits");
  }
  latent = register_module("latent", torch::nn::Linear(o.in_dim(), latent_width));
  prior = register_module("prior", torch::nn::Linear(torch::nn::LinearOptions(o.in_dim(), o.K()).bias(false)));
}

nlohmann::json MosHeadImpl::config() const { return declared_head_config(kind(), options); }

const config::BoundOptions<MosHeadOptions>& declared_options(config::Tag<MosHeadOptions>) {
  static const config::BoundOptions<MosHeadOptions> options(
      "mos", {LMKIT_BOUND_ACCESSOR(MosHeadOptions, K, Integer, int64_t, at_least(1), "the number of mixture components"),
              LMKIT_BOUND_ACCESSOR(MosHeadOptions, dropoutl, Number, double, from_up_to(0, 1),
                                   "locked dropout on the latent contexts h_k"),
              LMKIT_BOUND_ACCESSOR(MosHeadOptions, floor, Number, double, from_up_to(0, 1),
                                   "log(P + floor) instead of log P (the MoS code's 1e-8); 0: exact")});
  return options;
}

std::tuple<torch::Tensor, torch::Tensor> MosHeadImpl::mixture(const torch::Tensor& h) {
  // Locked dropout needs the [T, B, ·] layout; the mask is shared across time.
  auto hk = locked_dropout(torch::tanh(latent(h)), options.dropoutl(), is_training());
  auto log_prior = torch::log_softmax(prior(rows_of(h)), 1);
  return {hk.reshape({-1, options.K(), options.latent_dim()}), log_prior};
}

torch::Tensor MosHeadImpl::floored(const torch::Tensor& log_p) const {
  if (options.floor() <= 0) return log_p;
  // logaddexp, not log(exp(log P) + floor): exact where P underflows.
  return torch::logaddexp(log_p, torch::full({}, std::log(options.floor()), log_p.options()));
}

torch::Tensor MosHeadImpl::log_probs(const torch::Tensor& h, const Decoder& decoder) {
  auto [hk, log_prior] = mixture(h);
  return floored(ops::mixture_log_probs(hk, log_prior, decoder.weight, decoder.bias, component_c_, component_kappa_));
}

torch::Tensor MosHeadImpl::nll(const torch::Tensor& h, const torch::Tensor& targets, const Decoder& decoder) {
  auto [hk, log_prior] = mixture(h);
  const auto nll = ops::mixture_nll(hk, log_prior, decoder.weight, decoder.bias, targets.reshape({-1}),
                                    component_c_, component_kappa_);
  return options.floor() > 0 ? -floored(-nll) : nll;
}

MossHeadImpl::MossHeadImpl(MosHeadOptions o) : MosHeadImpl(o) {
  component_c_ = 0.0;
  component_kappa_ = 2.0;
}

MocHeadImpl::MocHeadImpl(MosHeadOptions o) : MosHeadImpl(o) {}

torch::Tensor MocHeadImpl::log_probs(const torch::Tensor& h, const Decoder& decoder) {
  auto [hk, log_prior] = mixture(h);
  auto context = (hk * log_prior.exp().unsqueeze(2)).sum(1);  // Σ_k π_k h_k  [M, d]
  return floored(torch::log_softmax(decoder.logits(context), 1));
}

torch::Tensor MocHeadImpl::nll(const torch::Tensor& h, const torch::Tensor& targets, const Decoder& decoder) {
  auto [hk, log_prior] = mixture(h);
  auto l = decoder.logits((hk * log_prior.exp().unsqueeze(2)).sum(1));
  const auto nll = torch::logsumexp(l, 1) - l.gather(1, targets.reshape({-1, 1})).squeeze(1);
  return options.floor() > 0 ? -floored(-nll) : nll;
}

// The three mixtures share their options and capabilities; they differ in the summary and the class.
namespace {

template <typename Impl>
HeadKind mixture_kind(const char* kind, const char* summary) {
  return declared_head_kind<Impl, MosHeadOptions>(kind, summary, HeadCapabilities{/*projects=*/true, /*pointwise=*/false, /*monotone=*/false, /*mixture=*/true},
                                                  {{{"K", 3}}});
}

}  // namespace

LMKIT_REGISTER_HEAD(mos) {
  return mixture_kind<MosHeadImpl>(
      "mos", "Mixture of Softmaxes: logsumexp_k(log π_k + log_softmax(h_k·Eᵀ + b)), h_k = tanh(W_k h), π = softmax(U h).");
}

LMKIT_REGISTER_HEAD(moss) {
  return mixture_kind<MossHeadImpl>("moss", "Mixture of SigSoftmaxes: MoS with SigSoftmax components.");
}

LMKIT_REGISTER_HEAD(moc) {
  return mixture_kind<MocHeadImpl>("moc", "Mixture of Contexts: log_softmax((Σ_k π_k h_k)·Eᵀ + b).");
}

}  // namespace lmkit
